import { createHash } from "node:crypto";
import { InvalidDefinitionError, type SerializedError, StorageError } from "../core/errors.ts";
import type {
  AcceptanceRecord,
  Actor,
  AttemptRecord,
  EffectRecord,
  Json,
  ParentClosePolicy,
  RunRecord,
  RunUsage,
  SignalRecord,
  StepKind,
  StepRecord,
  StopRequest,
  TransitionRecord,
  Usage,
  Versions,
  WaitKind,
  WaitRecord,
  WaitResolution,
} from "../core/records.ts";
import type { PausedReason, RunState } from "../core/run-state.ts";

/**
 * The row shapes of the SQL backends (SQLite, PostgreSQL) and their mapping to records, shared so
 * the backends store and read exactly the same thing. JSON columns hold text: SQL NULL is
 * `undefined`, the JSON text `null` is JSON null, so the two stay distinct through a round trip.
 * A step's arguments and result above the backend's inline limit are kept out of line in `blobs`
 * ({@link encodeStep}, {@link rowToStep}).
 */

/** A `runs` row as the SQL backends read it: JSON columns as text, times as numbers. */
export interface RunRow {
  id: string;
  agent: string;
  workflow: string;
  run_key: string | null;
  state: string;
  paused_reason: string | null;
  input: string;
  output: string | null;
  error: string | null;
  epoch: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  recoveries: number;
  last_transition_id: number;
  versions: string;
  meta: string;
  parent_run_id: string | null;
  parent_close_policy: string | null;
  stop_request: string | null;
  continued_from: string | null;
  continued_to: string | null;
  usage: string | null;
  acceptance: string | null;
  created_at: number;
  updated_at: number;
}

/** A `waits` row. */
export interface WaitRow {
  run_id: string;
  id: string;
  seq: number;
  kind: string;
  name: string;
  status: string;
  details: string;
  due_at: number | null;
  resolution: string | null;
  created_at: number;
}

/** A `signals` row. */
export interface SignalRow {
  run_id: string;
  message_id: string;
  name: string;
  payload: string;
  received_at: number;
  consumed_by: string | null;
}

/** A `transitions` row. */
export interface TransitionRow {
  run_id: string;
  id: number;
  at: number;
  actor_kind: string;
  actor_id: string;
  from_state: string | null;
  to_state: string;
  paused_reason: string | null;
  reason: string;
  versions: string;
}

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

/** A `blobs` row: a payload stored out of line, once per content. */
export interface BlobRow {
  /** sha-256 of `text`, in hex. */
  digest: string;
  /** The payload's JSON text. */
  text: string;
  /** UTF-8 bytes of `text`. */
  bytes: number;
}

/**
 * Bytes of JSON text above which a step's arguments or result are stored out of line (in
 * `blobs`), 256 KiB unless a backend's `inlineLimitBytes` says otherwise.
 */
export const DEFAULT_INLINE_LIMIT_BYTES = 256 * 1024;

/**
 * How a column that holds a reference to a blob begins: its whole text is
 * `{"$cairnBlob":"sha256:<hex>","bytes":N}`. A payload whose own text begins so is stored out of
 * line whatever its size, so a column that begins so is always a reference.
 */
const BLOB_REF = '{"$cairnBlob":"sha256:';

/** The `inlineLimitBytes` option of a SQL backend, checked, or the default. */
export function inlineLimit(option: number | undefined, backend: string): number {
  if (option === undefined) return DEFAULT_INLINE_LIMIT_BYTES;
  if (!(Number.isSafeInteger(option) && option >= 0)) {
    throw new InvalidDefinitionError(
      `${backend} inlineLimitBytes must be a whole number of bytes, 0 or more (got ${String(option)})`,
    );
  }
  return option;
}

/**
 * The column text of a payload: its JSON text, or, when that is longer than `limit` bytes, a
 * reference to a blob that `blobs` receives.
 */
function encodePayload(value: Json | undefined, limit: number, blobs: BlobRow[]): string | null {
  if (value === undefined) return null;
  const text = JSON.stringify(value);
  const lookalike = text.startsWith(BLOB_REF);
  // A UTF-16 code unit takes 1 to 3 bytes of UTF-8: most texts need no count.
  if (!lookalike && text.length * 3 <= limit) return text;
  const bytes = Buffer.byteLength(text, "utf8");
  if (!lookalike && bytes <= limit) return text;
  const digest = createHash("sha256").update(text, "utf8").digest("hex");
  if (!blobs.some((b) => b.digest === digest)) blobs.push({ digest, text, bytes });
  return `${BLOB_REF}${digest}","bytes":${bytes}}`;
}

/** The digest a column refers to, when it holds a blob reference. */
function blobDigest(text: string | null): string | undefined {
  if (text === null || !text.startsWith(BLOB_REF)) return undefined;
  return text.slice(BLOB_REF.length, BLOB_REF.length + 64);
}

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

/** The blobs' texts by digest. */
export type BlobTexts = ReadonlyMap<string, string>;

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

/** JSON text for a column, or NULL for `undefined`. */
export function encode(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

function decode<T>(text: string | null): T | undefined {
  return text === null ? undefined : (JSON.parse(text) as T);
}

/** The record of a `runs` row. */
export function rowToRun(row: RunRow): RunRecord {
  return {
    id: row.id,
    agent: row.agent,
    workflow: row.workflow,
    key: row.run_key,
    state: row.state as RunState,
    pausedReason: row.paused_reason as PausedReason | null,
    input: JSON.parse(row.input) as Json,
    output: decode<Json>(row.output),
    error: decode<SerializedError>(row.error),
    epoch: row.epoch,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    recoveries: row.recoveries,
    lastTransitionId: row.last_transition_id,
    versions: JSON.parse(row.versions) as Versions,
    meta: JSON.parse(row.meta) as Record<string, Json>,
    parentRunId: row.parent_run_id,
    parentClosePolicy: row.parent_close_policy as ParentClosePolicy | null,
    stopRequest: decode<StopRequest>(row.stop_request),
    continuedFrom: row.continued_from,
    continuedTo: row.continued_to,
    usage: decode<RunUsage>(row.usage),
    acceptance: decode<AcceptanceRecord>(row.acceptance),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The record of a `transitions` row. */
export function rowToTransition(row: TransitionRow): TransitionRecord {
  return {
    runId: row.run_id,
    id: row.id,
    at: row.at,
    actor: { kind: row.actor_kind as Actor["kind"], id: row.actor_id },
    from: row.from_state as RunState | null,
    to: row.to_state as RunState,
    pausedReason: row.paused_reason as PausedReason | null,
    reason: row.reason,
    versions: JSON.parse(row.versions) as Versions,
  };
}

/** The positional parameters of the `transitions` insert, in column order. */
export function transitionParams(t: TransitionRecord): unknown[] {
  return [
    t.runId,
    t.id,
    t.at,
    t.actor.kind,
    t.actor.id,
    t.from,
    t.to,
    t.pausedReason,
    t.reason,
    JSON.stringify(t.versions),
  ];
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

/**
 * Every column of a `runs` row in table order, encoded: what a full-row INSERT (a new run, a
 * `continueAsNew` successor) or a full-row UPDATE (a plan's changed runs) binds.
 */
export const RUN_COLUMNS = [
  "id",
  "agent",
  "workflow",
  "run_key",
  "state",
  "paused_reason",
  "input",
  "output",
  "error",
  "epoch",
  "lease_owner",
  "lease_expires_at",
  "recoveries",
  "last_transition_id",
  "versions",
  "meta",
  "parent_run_id",
  "parent_close_policy",
  "stop_request",
  "continued_from",
  "continued_to",
  "usage",
  "acceptance",
  "created_at",
  "updated_at",
] as const;

/**
 * The values of {@link RUN_COLUMNS} for a run. With `before` (the run as loaded), a JSON column
 * whose value is the very object `before` holds is left unserialized (`undefined`, SQL NULL):
 * the planners copy a run with spread, so such a value did not change, and a statement that
 * writes only the changed JSON columns (PostgreSQL's `writePlan`) keeps the stored one. A run's
 * input, meta and versions never change, and need not be sent again with each transition.
 */
export function runValues(run: RunRecord, before?: RunRecord): unknown[] {
  const kept = (field: keyof RunRecord) => before !== undefined && before[field] === run[field];
  return [
    run.id,
    run.agent,
    run.workflow,
    run.key,
    run.state,
    run.pausedReason,
    kept("input") ? undefined : JSON.stringify(run.input),
    kept("output") ? undefined : encode(run.output),
    kept("error") ? undefined : encode(run.error),
    run.epoch,
    run.leaseOwner,
    run.leaseExpiresAt,
    run.recoveries,
    run.lastTransitionId,
    kept("versions") ? undefined : JSON.stringify(run.versions),
    kept("meta") ? undefined : JSON.stringify(run.meta),
    run.parentRunId,
    run.parentClosePolicy,
    kept("stopRequest") ? undefined : encode(run.stopRequest),
    run.continuedFrom,
    run.continuedTo,
    kept("usage") ? undefined : encode(run.usage),
    kept("acceptance") ? undefined : encode(run.acceptance),
    run.createdAt,
    run.updatedAt,
  ];
}

/** Columns of a `waits` row in table order. */
export const WAIT_COLUMNS = [
  "run_id",
  "id",
  "seq",
  "kind",
  "name",
  "status",
  "details",
  "due_at",
  "resolution",
  "created_at",
] as const;

/** The values of {@link WAIT_COLUMNS} for a wait. */
export function waitValues(wait: WaitRecord): unknown[] {
  return [
    wait.runId,
    wait.id,
    wait.seq,
    wait.kind,
    wait.name,
    wait.status,
    JSON.stringify(wait.details),
    wait.dueAt,
    encode(wait.resolution),
    wait.createdAt,
  ];
}

/** The record of a `waits` row. */
export function rowToWait(row: WaitRow): WaitRecord {
  return {
    runId: row.run_id,
    id: row.id,
    seq: row.seq,
    kind: row.kind as WaitKind,
    name: row.name,
    status: row.status as WaitRecord["status"],
    details: JSON.parse(row.details) as Json,
    dueAt: row.due_at,
    resolution: decode<WaitResolution>(row.resolution),
    createdAt: row.created_at,
  };
}

/** Columns of a `signals` row in table order. */
export const SIGNAL_COLUMNS = ["run_id", "message_id", "name", "payload", "received_at", "consumed_by"] as const;

/** The values of {@link SIGNAL_COLUMNS} for a signal. */
export function signalValues(signal: SignalRecord): unknown[] {
  return [
    signal.runId,
    signal.messageId,
    signal.name,
    JSON.stringify(signal.payload),
    signal.receivedAt,
    signal.consumedBy,
  ];
}

/** The record of a `signals` row. */
export function rowToSignal(row: SignalRow): SignalRecord {
  return {
    runId: row.run_id,
    messageId: row.message_id,
    name: row.name,
    payload: JSON.parse(row.payload) as Json,
    receivedAt: row.received_at,
    consumedBy: row.consumed_by,
  };
}
