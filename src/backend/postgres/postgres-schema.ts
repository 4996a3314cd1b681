import pg from "pg";
import type { StepRecord } from "../../core/records.ts";
import type { BlobRow } from "../rows/blob-payloads.ts";
import { encodeStep, STEP_VALUE_COLUMNS, type StepRow } from "../rows/step-rows.ts";

/**
 * The rows of the PostgreSQL schema and their mapping to records. One row per run, per transition,
 * per step, per wait and per signal (DESIGN §7). JSON payloads are `json` columns (not `jsonb`): `json` keeps the text
 * as written, so object keys come back in their order and strings may hold `\u0000`, both of which
 * `jsonb` would change or refuse. A SQL NULL means `undefined`, the JSON text `null` means JSON
 * null, so the two stay distinct through a round trip (as in the SQLite backend).
 */

const INT8 = 20;
const JSON_OID = 114;
const JSONB_OID = 3802;

function int8ToNumber(text: string): number {
  return Number(text);
}

function rawText(text: string): string {
  return text;
}

/**
 * The type parsers of every query this backend runs (passed per query, so a pool handed in by the
 * application keeps its own settings). BIGINT columns hold epoch milliseconds, well inside
 * `Number.MAX_SAFE_INTEGER`, and come back as numbers rather than pg's default strings. JSON
 * columns come back as their text: pg's own parser would turn SQL NULL and JSON `null` into the
 * same `null`, and the row mapping must tell them apart.
 */
export const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (oid === INT8) return int8ToNumber;
    if (oid === JSON_OID || oid === JSONB_OID) return rawText;
    return format === undefined ? pg.types.getTypeParser(oid) : pg.types.getTypeParser(oid, format);
  }) as pg.CustomTypesConfig["getTypeParser"],
};

/**
 * Rows (each a list of column values, in `columns` order) as the JSON text of an array of objects
 * keyed by column name: the parameter `json_to_recordset` reads back (see `recordset` in
 * `postgres-statements.ts`). One JSON text rather than one array per column: `JSON.stringify` is
 * native, where pg escapes the elements of each text array one by one. `undefined` and `null`
 * are SQL NULL; a JSON column's value is its JSON text.
 */
export function recordsetJson(rows: readonly (readonly unknown[])[], columns: readonly string[]): string {
  return JSON.stringify(rows.map((row) => keyedBy(columns, row)));
}

/** A row's values as an object keyed by column name (`undefined` leaves the key out of JSON). */
function keyedBy(columns: readonly string[], values: readonly unknown[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (let i = 0; i < columns.length; i++) record[columns[i] as string] = values[i];
  return record;
}

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

/** `name` as a quoted SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
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
  const blobList = [...blobs.values()];
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
