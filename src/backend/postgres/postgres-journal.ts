import { InvalidInputError } from "../../core/errors.ts";
import type { StepRecord } from "../../core/records.ts";
import { rowToStep, type StepRow, stepBlobDigests } from "../rows/step-rows.ts";
import type { CommitBatcher } from "./batching/postgres-commit-batcher.ts";
import { journalBatcher, type StepWrite } from "./batching/postgres-step-batch.ts";
import { foldJournal, type JournalRow } from "./postgres-journal-entries.ts";
import type { PostgresShared } from "./postgres-plans.ts";

/** The journal of `PostgresBackend` (`JournalStore`): steps written under the epoch's fence, in batches. */
export class PostgresJournal {
  readonly #x: PostgresShared;
  /** Step writes of all runs, batched into shared commits. */
  #steps: CommitBatcher<StepWrite, void> | undefined;

  constructor(shared: PostgresShared) {
    this.#x = shared;
  }

  async saveSteps(steps: readonly StepRecord[], options: { epoch: number; sync: boolean }): Promise<void> {
    this.#x.db.ready();
    const first = steps[0];
    if (!first) return;
    if (steps.some((step) => step.runId !== first.runId)) {
      throw new InvalidInputError("saveSteps takes the steps of one run");
    }
    this.#steps ??= journalBatcher(this.#x);
    return this.#steps.submit({ runId: first.runId, epoch: options.epoch, steps, sync: options.sync });
  }

  async loadSteps(runId: string): Promise<StepRecord[]> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    return db.call("loadSteps", async () => {
      const [older, entries] = await Promise.all([
        db.query<StepRow>(pool, statements.loadSteps, [runId]),
        db.query<JournalRow>(pool, statements.loadJournal, [runId]),
      ]);
      const rows = foldJournal(runId, older, entries);
      const digests = stepBlobDigests(rows);
      // A second query outside a transaction is safe: blobs are committed with the steps that
      // refer to them and never change.
      const blobs =
        digests.length === 0
          ? undefined
          : new Map(
              (await db.query<{ digest: string; text: string }>(pool, statements.loadBlobs, [digests])).map(
                (b) => [b.digest, b.text] as const,
              ),
            );
      return rows.map((row) => rowToStep(row, blobs));
    });
  }
}
