import { type SerializedError, StorageError } from "../../core/errors.ts";
import type { AttemptRecord, EffectRecord, Json, StepKind, StepRecord, Usage } from "../../core/records.ts";
import { type BlobRow, type BlobTexts, blobDigest, encodePayload } from "./blob-payloads.ts";
import { decode, encode } from "./json-columns.ts";

/** A `steps` row. */
export interface StepRow {
  run_id: string;
  seq: number;
  kind: string;
  name: string;
  status: string;
  args_digest: string;
  args: string | null;
  result: string | null;
  error: string | null;
  attempts: string;
  heartbeat: string | null;
  usage: string | null;
  started_at: number;
  ended_at: number | null;
  epoch: number;
  /** The step's `EffectRecord`, for an effect tool's step. */
  effect: string | null;
}

/**
 * The record of a `steps` row. `blobs` holds the texts of the blobs its arguments and result
 * refer to (see {@link stepBlobDigests}), so a record never carries a reference.
 */
export function rowToStep(row: StepRow, blobs?: BlobTexts): StepRecord {
  return {
    runId: row.run_id,
    seq: row.seq,
    kind: row.kind as StepKind,
    name: row.name,
    status: row.status as StepRecord["status"],
    argsDigest: row.args_digest,
    args: decodePayload(row, "args", blobs),
    result: decodePayload(row, "result", blobs),
    error: decode<SerializedError>(row.error),
    attempts: JSON.parse(row.attempts) as AttemptRecord[],
    heartbeat: decode<Json>(row.heartbeat),
    usage: decode<Usage>(row.usage),
    ...(row.effect === null ? {} : { effect: decodeEffect(row.effect) }),
    startedAt: row.started_at,
    endedAt: row.ended_at,
    epoch: row.epoch,
  };
}

/** The fields of an `EffectRecord` that may hold `undefined`, which JSON text leaves out. */
const EFFECT_OPTIONAL_FIELDS = [
  "receipt",
  "settledBy",
  "settledAt",
  "unknown",
  "reconciliation",
  "compensates",
] as const;

/**
 * The effect record of a step's `effect` column. JSON text drops a key whose value is
 * `undefined`; the fields that may be undefined are put back, so the record loads as it was saved
 * (as in the memory backend).
 */
function decodeEffect(text: string): EffectRecord {
  const effect = JSON.parse(text) as EffectRecord;
  for (const field of EFFECT_OPTIONAL_FIELDS) if (!(field in effect)) effect[field] = undefined;
  return effect;
}

/** A step as a SQL backend writes it: its columns, and the blobs to write with it. */
export interface EncodedStep {
  /**
   * The step's data columns: `seq` to `ended_at` in table order, then `effect` (without `run_id`
   * and `epoch`, which each backend binds its own way). See {@link STEP_VALUE_COLUMNS}.
   */
  values: unknown[];
  /**
   * Arguments or a result whose JSON text is longer than the inline limit: the step's column
   * holds a reference (`{"$cairnBlob":"sha256:<hex>","bytes":N}`) and the text goes to `blobs`,
   * in the same transaction. Writing a blob that exists already changes nothing.
   */
  blobs: BlobRow[];
}

/** A step's columns, encoded as every SQL backend stores them; see {@link EncodedStep}. */
export function encodeStep(step: StepRecord, inlineLimitBytes: number): EncodedStep {
  const blobs: BlobRow[] = [];
  const values = [
    step.seq,
    step.kind,
    step.name,
    step.status,
    step.argsDigest,
    encodePayload(step.args, inlineLimitBytes, blobs),
    encodePayload(step.result, inlineLimitBytes, blobs),
    encode(step.error),
    JSON.stringify(step.attempts),
    encode(step.heartbeat),
    encode(step.usage),
    step.startedAt,
    step.endedAt,
    encode(step.effect),
  ];
  return { values, blobs };
}

/** The columns of {@link EncodedStep.values}, in order. */
export const STEP_VALUE_COLUMNS = [
  "seq",
  "kind",
  "name",
  "status",
  "args_digest",
  "args",
  "result",
  "error",
  "attempts",
  "heartbeat",
  "usage",
  "started_at",
  "ended_at",
  "effect",
] as const;

/** The digests of the blobs `rows` refer to (each once), for the query that loads them. */
export function stepBlobDigests(rows: readonly StepRow[]): string[] {
  const digests = new Set<string>();
  for (const row of rows) {
    for (const text of [row.args, row.result]) {
      const digest = blobDigest(text);
      if (digest) digests.add(digest);
    }
  }
  return [...digests];
}

/** A step's arguments or result, read from its column or, for a reference, from `blobs`. */
function decodePayload(row: StepRow, column: "args" | "result", blobs: BlobTexts | undefined): Json | undefined {
  const text = row[column];
  const digest = blobDigest(text);
  if (digest === undefined) return decode<Json>(text);
  const blob = blobs?.get(digest);
  if (blob === undefined) {
    throw new StorageError(
      `run ${row.run_id}, step ${row.seq}: its ${column === "args" ? "arguments are" : "result is"} stored out of line as sha256:${digest}, and the blobs table has no such row; the database lost data (restore it from a backup)`,
    );
  }
  return JSON.parse(blob) as Json;
}
