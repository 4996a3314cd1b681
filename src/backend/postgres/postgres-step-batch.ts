import type { StepRecord } from "../../core/records.ts";

/** One run's `saveSteps` call waiting for the next batch. */
export interface StepWrite {
  runId: string;
  epoch: number;
  steps: readonly StepRecord[];
  sync: boolean;
}

/**
 * Group commit across runs: the `saveSteps` calls of all runs a process drives go out in batches,
 * one statement and one commit per batch, while the previous batch is being written. A lone write
 * goes out at once (no added latency); under load, the runs that wrote meanwhile share the next
 * commit. Each run's writes stay fenced by its own epoch: `write` returns the runs whose steps
 * were stored, and every other caller of the batch gets `refused(write)`'s error. A batch that
 * fails as a whole fails each of its callers with that error. Writes of one run keep their order
 * (a run has one journal writer, which waits for each write before the next).
 */
export class StepBatcher {
  readonly #write: (batch: readonly StepWrite[]) => Promise<ReadonlySet<string>>;
  readonly #refused: (write: StepWrite) => Promise<Error>;
  readonly #maxRuns: number;
  #queue: Array<{ write: StepWrite; resolve: () => void; reject: (error: unknown) => void }> = [];
  #busy = false;

  constructor(options: {
    write: (batch: readonly StepWrite[]) => Promise<ReadonlySet<string>>;
    refused: (write: StepWrite) => Promise<Error>;
    /** Most runs in one statement. @default 200 */
    maxRuns?: number;
  }) {
    this.#write = options.write;
    this.#refused = options.refused;
    this.#maxRuns = options.maxRuns ?? 200;
  }

  /** Queues one run's steps; resolves once they are committed. */
  save(write: StepWrite): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ write, resolve, reject });
      if (!this.#busy) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#busy = true;
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, this.#maxRuns);
        let stored: ReadonlySet<string>;
        try {
          stored = await this.#write(batch.map((b) => b.write));
        } catch (error) {
          for (const item of batch) item.reject(error);
          continue;
        }
        for (const item of batch) {
          if (stored.has(item.write.runId) || item.write.steps.length === 0) item.resolve();
          else this.#refused(item.write).then(item.reject, item.reject);
        }
      }
    } finally {
      this.#busy = false;
    }
  }
}
