import type { StepRecord } from "../../core/records.ts";
import type { BlobRow } from "../rows/blob-payloads.ts";
import { encodeStep, STEP_VALUE_COLUMNS, type StepRow } from "../rows/step-rows.ts";

/**
 * The step journal of `PostgresBackend` (migration 5, DESIGN §7): each step write appends one
 * entry per run, holding the epoch its writer held and the steps it wrote, as the JSON of
 * `encodeStep`'s columns with the NULL ones left out; a run's steps are read back by folding its
 * entries, a later write of a seq replacing the earlier.
 */

/**
 * A step's encoded columns as an object of a journal entry: a SQL NULL is a key left out, which
 * {@link foldJournal} reads back as NULL. A step holds seven nullable columns, most of them NULL
 * (a started step has no result, a completed one no error): leaving them out makes the entry a
 * fifth smaller, which the server parses in every step write.
 */
function journalStep(values: readonly unknown[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (let i = 0; i < STEP_VALUE_COLUMNS.length; i++) {
    const value = values[i];
    if (value !== null && value !== undefined) record[STEP_VALUE_COLUMNS[i] as string] = value;
  }
  return record;
}

/** One run's journal entry of a step write: the epoch its writer holds, and its steps ({@link journalStep}). */
export interface JournalEntry {
  run_id: string;
  epoch: number;
  steps: Record<string, unknown>[];
}

/**
 * What a step write stores: one journal entry per run, `steps` holding the run's steps as objects
 * keyed by the columns of `encodeStep` (a JSON column as its text, a missing key for SQL NULL:
 * {@link journalStep}), and the blobs they refer to as three arrays (digests, texts, bytes), each
 * blob once. Within a run, a later step with the same seq replaces an earlier one, as a later
 * entry does when the journal is read.
 */
export function journalWrite(
  requests: ReadonlyArray<{ epoch: number; steps: readonly StepRecord[] }>,
  inlineLimitBytes: number,
): { entries: JournalEntry[]; blobs: [string[], string[], number[]] } {
  const runs = new Map<string, { epoch: number; steps: Map<number, StepRecord> }>();
  for (const request of requests) {
    for (const step of request.steps) {
      const run = runs.get(step.runId) ?? { epoch: request.epoch, steps: new Map<number, StepRecord>() };
      run.steps.set(step.seq, step);
      runs.set(step.runId, run);
    }
  }
  const blobs = new Map<string, BlobRow>();
  const entries = [...runs].map(([runId, { epoch, steps }]) => ({
    run_id: runId,
    epoch,
    steps: [...steps.values()].map((step) => {
      const encoded = encodeStep(step, inlineLimitBytes);
      for (const blob of encoded.blobs) blobs.set(blob.digest, blob);
      return journalStep(encoded.values);
    }),
  }));
  // In digest order: every writer locks the blobs it names in one order (no deadlock between two).
  const blobList = [...blobs.values()].sort((a, b) => (a.digest < b.digest ? -1 : a.digest > b.digest ? 1 : 0));
  return {
    entries,
    blobs: [blobList.map((b) => b.digest), blobList.map((b) => b.text), blobList.map((b) => b.bytes)],
  };
}

/**
 * The parameters of the batched step write after its first three ({@link journalWrite}): the
 * journal entries as one JSON array of `{ run_id, epoch, steps }` (read by `json_to_recordset`),
 * then the blobs' three arrays. One JSON text rather than an array per column: `JSON.stringify`
 * is native, where pg escapes the elements of each text array one by one.
 */
export function batchStepParams(
  requests: ReadonlyArray<{ epoch: number; steps: readonly StepRecord[] }>,
  inlineLimitBytes: number,
): unknown[] {
  const { entries, blobs } = journalWrite(requests, inlineLimitBytes);
  return [JSON.stringify(entries), ...blobs];
}

/** A `journal` row: the epoch its writer held, and the steps it wrote as JSON text. */
export interface JournalRow {
  epoch: number;
  steps: string;
}

/** The nullable step columns as SQL NULL, for the keys an entry leaves out (`undefined` in `encodeStep`). */
const ABSENT = {
  args: null,
  result: null,
  error: null,
  heartbeat: null,
  usage: null,
  ended_at: null,
  effect: null,
} as const;

/**
 * A run's steps as rows, one per seq in seq order: its `steps` rows (written before migration 5),
 * then each journal entry in the order written, a later write of a seq replacing the earlier.
 */
export function foldJournal(runId: string, older: readonly StepRow[], entries: readonly JournalRow[]): StepRow[] {
  const bySeq = new Map<number, StepRow>();
  for (const row of older) bySeq.set(row.seq, row);
  for (const entry of entries) {
    for (const step of JSON.parse(entry.steps) as Omit<StepRow, "run_id" | "epoch">[]) {
      bySeq.set(step.seq, { ...ABSENT, ...step, run_id: runId, epoch: entry.epoch });
    }
  }
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}
