import type { StepRecord } from "../records.ts";

/**
 * Group commit of one run's step records. A step's function never runs before its start
 * record is committed; a completed result is handed to the workflow at once and committed with
 * the next write the run must make anyway — normally the next step's start record — so a
 * sequential workflow pays one commit per step instead of two. Nothing outside the run can
 * observe a result before it is durable: the next step runs only after the commit that carries
 * it, and the run's final transition waits for {@link flush}. A crash before that commit loses
 * only the result of a tool that then runs once more, exactly as a crash a moment earlier would.
 *
 * Writes of the same step before a flush coalesce (the latest state is written).
 *
 * The results still queued when a workflow returns need no write of their own: {@link drain}
 * hands them to the transition that completes the run, which commits them with its output.
 */
export class JournalWriter {
  readonly #write: (steps: StepRecord[], sync: boolean) => Promise<void>;
  readonly #pending = new Map<number, StepRecord>();
  #sync = false;
  #flushing: Promise<void> | undefined;
  #scheduled = false;
  #error: unknown;
  #closed = false;

  /** `write` commits the steps in one transaction; `sync` asks for a synchronous commit. */
  constructor(write: (steps: StepRecord[], sync: boolean) => Promise<void>) {
    this.#write = write;
  }

  /**
   * Writes `step` before something runs that depends on it (a step's function, a retry): resolves
   * once it and everything queued before it are committed. `sync` asks for a synchronous commit
   * whatever else is queued (an effect's intent must be durable before the effect runs).
   */
  before(step: StepRecord, sync = false): Promise<void> {
    if (this.#closed) return Promise.reject(new Error(`step ${step.seq} was started after its run ended`));
    this.#pending.set(step.seq, step);
    if (sync) this.#sync = true;
    return this.flush();
  }

  /**
   * Queues `step` (a result, a failure, a value, a heartbeat). `sync` marks it as needing a
   * synchronous commit. It is committed with the next write, or on the next turn of the event
   * loop if none comes.
   */
  later(step: StepRecord, sync: boolean): void {
    if (this.#closed) return;
    this.#pending.set(step.seq, step);
    if (sync) this.#sync = true;
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        // Usually the next step's start record has taken it into a write already.
        if (this.#pending.size === 0) return;
        this.flush().catch((error: unknown) => {
          this.#error ??= error;
        });
      });
    }
  }

  /**
   * Accepts nothing more: the run has ended (its final transition follows), so a step still in
   * flight — a `ctx` call the workflow did not await — must not write after it.
   */
  close(): void {
    this.#closed = true;
  }

  /**
   * Accepts nothing more and hands back what is queued, once the writes in flight have committed:
   * for the run's final transition to carry, in its own transaction. Rejects as {@link flush} does
   * once a write has failed.
   */
  async drain(): Promise<StepRecord[]> {
    this.#closed = true;
    while (this.#flushing) await this.#flushing.catch(() => {});
    if (this.#error !== undefined) throw this.#error;
    const steps = [...this.#pending.values()];
    this.#pending.clear();
    this.#sync = false;
    return steps;
  }

  /**
   * Commits everything queued. Rejects with the write's error (e.g. a lost lease); once a write
   * has failed, every later flush rejects with that error and writes nothing.
   */
  async flush(): Promise<void> {
    // Let steps started in the same turn (Promise.all) join this write.
    await undefined;
    if (this.#error !== undefined) throw this.#error;
    // One write at a time, in order; writes queued meanwhile go in the next one.
    while (this.#flushing) await this.#flushing;
    if (this.#pending.size === 0) return;
    const steps = [...this.#pending.values()];
    const sync = this.#sync;
    this.#pending.clear();
    this.#sync = false;
    this.#flushing = this.#write(steps, sync)
      .catch((error: unknown) => {
        // A failed write is fatal to this writer, whoever asked for it: the steps it carried are
        // gone from the queue (a result among them may already be in the workflow's hands), so no
        // later step may run and no later write may commit as if they were stored.
        this.#error ??= error;
        throw error;
      })
      .finally(() => {
        this.#flushing = undefined;
      });
    await this.#flushing;
  }
}
