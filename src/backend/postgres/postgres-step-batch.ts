import type { StepRecord } from "../../core/records.ts";
import { CommitBatcher, type Settled } from "./postgres-batcher.ts";

/** One run's `saveSteps` call waiting for the next batch. */
export interface StepWrite {
  runId: string;
  epoch: number;
  steps: readonly StepRecord[];
  sync: boolean;
}

/** The outcome of a stored write (shared: it is never changed). */
const STORED: Settled<void> = { ok: true, value: undefined };

/**
 * Group commit of step writes across runs ({@link CommitBatcher}): one statement and one commit per
 * batch. Each run's writes stay fenced by its own epoch: `write` returns the runs whose steps were
 * stored, and every other caller of the batch gets `refused(write)`'s error. A batch that fails as
 * a whole fails each of its callers with that error. Writes of one run keep their order (a run has
 * one journal writer, which waits for each write before the next).
 */
export function stepBatcher(options: {
  write: (batch: readonly StepWrite[]) => Promise<ReadonlySet<string>>;
  refused: (write: StepWrite) => Promise<Error>;
}): CommitBatcher<StepWrite, void> {
  return new CommitBatcher<StepWrite, void>({
    run: async (batch) => {
      const stored = await options.write(batch);
      const outcome = (write: StepWrite) => stored.has(write.runId) || write.steps.length === 0;
      // Nearly always every write was stored: no promise per write then.
      if (batch.every(outcome)) return batch.map(() => STORED);
      return Promise.all(
        batch.map(
          async (write): Promise<Settled<void>> =>
            outcome(write) ? STORED : { ok: false, error: await options.refused(write) },
        ),
      );
    },
  });
}
