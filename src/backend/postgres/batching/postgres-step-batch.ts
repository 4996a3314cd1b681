import { LeaseLostError } from "../../../core/errors.ts";
import type { StepRecord } from "../../../core/records.ts";
import { journalWrite } from "../postgres-journal-entries.ts";
import type { PostgresShared } from "../postgres-plans.ts";
import { CommitBatcher, type Settled } from "./postgres-commit-batcher.ts";

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

/**
 * The step batch of a backend ({@link stepBatcher}): a batch of one run binds its entry directly
 * (`saveSteps`), a batch of several joins a recordset to its runs (`saveStepBatch`); it commits
 * synchronously when any of its writes asks for it (under `durability: "machine"`).
 */
export function journalBatcher(shared: PostgresShared): CommitBatcher<StepWrite, void> {
  const { db, statements } = shared;
  return stepBatcher({
    write: (batch) =>
      db.call("saveSteps", async () => {
        const pool = db.ready();
        const level = batch.some((w) => w.sync) && shared.durability === "machine" ? null : "off";
        const { entries, blobs } = journalWrite(batch, shared.inlineLimitBytes);
        const [one] = entries;
        if (one && entries.length === 1) {
          const written = await db.query<{ run_id: string }>(pool, statements.saveSteps, [
            one.run_id,
            one.epoch,
            level,
            JSON.stringify(one.steps),
            ...blobs,
          ]);
          return new Set(written.map((row) => row.run_id));
        }
        const runIds = batch.map((w) => w.runId);
        const refused = await db.query<{ run_id: string }>(pool, statements.saveStepBatch, [
          runIds,
          batch.map((w) => w.epoch),
          level,
          JSON.stringify(entries),
          ...blobs,
        ]);
        const stored = new Set(runIds);
        for (const row of refused) stored.delete(row.run_id);
        return stored;
      }),
    // The fence refused the write, which therefore changed nothing; the epoch read now only
    // words the error.
    refused: (write) =>
      db.call("saveSteps", async () => {
        const pool = db.ready();
        const seq = write.steps[0]?.seq;
        const [run] = await db.query<{ epoch: number }>(pool, statements.getEpoch, [write.runId]);
        if (!run) return new LeaseLostError(`run ${write.runId} does not exist; step ${seq} not saved`);
        return new LeaseLostError(
          `run ${write.runId}: step ${seq} under lease epoch ${write.epoch} refused, the run is at epoch ${run.epoch}; this worker lost the run`,
        );
      }),
  });
}
