import type { WorkerDeps } from "./worker-options.ts";

/** What the due timers need from their worker. */
export interface DueTimersHost {
  readonly deps: WorkerDeps;
  /** True once shutdown began: no timer is armed or fired. */
  stopped(): boolean;
  /** Runs went RESUMING: the worker looks for them. */
  poke(): void;
}

/**
 * The waits that come due (timers, retry backoffs, timeouts, approval expiries): fired in
 * batches, with one timer of the worker's clock armed for the next due time.
 */
export class DueTimers {
  readonly #host: DueTimersHost;
  /** The due time the timer is armed for, and its cancel function. */
  #dueAt = Number.POSITIVE_INFINITY;
  #cancel: (() => void) | undefined;

  constructor(host: DueTimersHost) {
    this.#host = host;
  }

  /**
   * Fires the waits that are due — their runs go RESUMING — then arms a timer for the next due
   * time.
   */
  async fire(): Promise<void> {
    const host = this.#host;
    if (host.stopped()) return;
    const { backend, clock } = host.deps;
    try {
      for (;;) {
        const fired = await backend.fireDueWaits(clock.now(), 100);
        if (fired.length > 0) host.poke();
        if (fired.length < 100) break;
      }
      const next = await backend.nextDueAt();
      this.cancel();
      if (next !== null) this.arm(next);
    } catch (error) {
      host.deps.logger.warn({ error: String(error) }, "firing due timers failed");
    }
  }

  /** Makes sure the worker looks for due waits at `at` (of the worker's clock). */
  arm(at: number): void {
    if (this.#host.stopped() || at >= this.#dueAt) return;
    this.#cancel?.();
    this.#dueAt = at;
    this.#cancel = this.#host.deps.clock.schedule(at, () => {
      this.#dueAt = Number.POSITIVE_INFINITY;
      this.#cancel = undefined;
      void this.fire();
    });
  }

  /** Disarms the timer. */
  cancel(): void {
    this.#cancel?.();
    this.#cancel = undefined;
    this.#dueAt = Number.POSITIVE_INFINITY;
  }
}
