import type Database from "better-sqlite3";
import { LeaseLostError } from "../../core/errors.ts";
import type { StepRecord } from "../../core/records.ts";
import { type EncodedStep, encodeStep, rowToStep, stepBlobDigests } from "../rows/step-rows.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";
import type { Statements } from "./sqlite-statements.ts";

type Tx<F extends (...args: never[]) => unknown> = Database.Transaction<F>;

/** The journal of `SqliteBackend` (`JournalStore`): steps written under the epoch's fence. */
export class SqliteJournal {
  readonly #c: SqliteConnection;
  readonly #s: Statements;
  readonly #inlineLimitBytes: number;
  /** Steps with their encoded columns and blobs (`encodeStep`), in one transaction. */
  readonly #saveMany: Tx<(steps: readonly { step: StepRecord; encoded: EncodedStep }[], epoch: number) => void>;

  constructor(connection: SqliteConnection, s: Statements, inlineLimitBytes: number) {
    this.#c = connection;
    this.#s = s;
    this.#inlineLimitBytes = inlineLimitBytes;
    this.#saveMany = connection.db.transaction(
      (steps: readonly { step: StepRecord; encoded: EncodedStep }[], epoch: number) => {
        for (const { step, encoded } of steps) saveStepFenced(s, step, encoded, epoch);
      },
    );
  }

  /** In the next group commit (`SqliteConnection.group`), with the other writes of its turn. */
  async saveSteps(steps: readonly StepRecord[], options: { epoch: number; sync: boolean }): Promise<void> {
    if (steps.length === 0) return;
    const s = this.#s;
    await this.#c.group(options.sync, "saveSteps", () => {
      const encoded = steps.map((step) => ({ step, encoded: encodeStep(step, this.#inlineLimitBytes) }));
      const [only] = encoded;
      // One step without blobs: fence and upsert are one statement, so one transaction without
      // BEGIN. Otherwise one immediate transaction, rolled back whole if the fence refuses any.
      if (encoded.length === 1 && only && only.encoded.blobs.length === 0) {
        saveStepFenced(s, only.step, only.encoded, options.epoch);
      } else {
        this.#saveMany.immediate(encoded, options.epoch);
      }
    });
  }

  loadSteps(runId: string): StepRecord[] {
    const s = this.#s;
    return this.#c.read("loadSteps", () => {
      const rows = s.loadSteps.all(runId);
      const digests = stepBlobDigests(rows);
      // A second read outside a transaction is safe: blobs are written with the steps that refer
      // to them and never change.
      const blobs =
        digests.length === 0
          ? undefined
          : new Map(s.loadBlobs.all(JSON.stringify(digests)).map((b) => [b.digest, b.text] as const));
      return rows.map((row) => rowToStep(row, blobs));
    });
  }
}

/**
 * Upserts one step if the run is still at `epoch` (fence and write are one statement), then the
 * blobs it refers to (inside the caller's transaction when there are any); a refused write
 * changed nothing, and the epoch read afterwards only words the error.
 */
export function saveStepFenced(s: Statements, step: StepRecord, encoded: EncodedStep, epoch: number): void {
  if (s.saveStep.run(...stepParams(step.runId, encoded.values, epoch)).changes === 1) {
    for (const blob of encoded.blobs) s.insertBlob.run(blob.digest, blob.text, blob.bytes);
    return;
  }
  const run = s.getEpoch.get(step.runId);
  if (!run) throw new LeaseLostError(`run ${step.runId} does not exist; step ${step.seq} not saved`);
  throw new LeaseLostError(
    `run ${step.runId}: step ${step.seq} under lease epoch ${epoch} refused, the run is at epoch ${run.epoch}; this worker lost the run`,
  );
}

/**
 * The positional parameters of the fenced step upsert: the step's columns in table order (the
 * encoded `values` of `encodeStep`, with `epoch` being the writer's), then the run id and epoch
 * of the fence.
 */
export function stepParams(runId: string, values: readonly unknown[], epoch: number): unknown[] {
  return [runId, ...values, epoch, runId, epoch];
}
