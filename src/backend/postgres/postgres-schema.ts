import pg from "pg";
import type { SerializedError } from "../../core/errors.ts";
import type {
  Actor,
  AttemptRecord,
  Json,
  RunRecord,
  StepKind,
  StepRecord,
  TransitionRecord,
  Usage,
  Versions,
} from "../../core/records.ts";
import type { PausedReason, RunState } from "../../core/run-state.ts";

/**
 * The rows of the PostgreSQL schema and their mapping to records. One row per run, per transition
 * and per step (DESIGN §7). JSON payloads are `json` columns (not `jsonb`): `json` keeps the text
 * as written, so object keys come back in their order and strings may hold `\u0000`, both of which
 * `jsonb` would change or refuse. A SQL NULL means `undefined`, the JSON text `null` means JSON
 * null, so the two stay distinct through a round trip (as in the SQLite backend).
 */

/** A `runs` row, as the queries of this backend return it (see {@link TYPES}). */
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
  created_at: number;
  updated_at: number;
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
}

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

/** The record of a `steps` row. */
export function rowToStep(row: StepRow): StepRecord {
  return {
    runId: row.run_id,
    seq: row.seq,
    kind: row.kind as StepKind,
    name: row.name,
    status: row.status as StepRecord["status"],
    argsDigest: row.args_digest,
    args: decode<Json>(row.args),
    result: decode<Json>(row.result),
    error: decode<SerializedError>(row.error),
    attempts: JSON.parse(row.attempts) as AttemptRecord[],
    heartbeat: decode<Json>(row.heartbeat),
    usage: decode<Usage>(row.usage),
    startedAt: row.started_at,
    endedAt: row.ended_at,
    epoch: row.epoch,
  };
}

/** The parameters of the run insert ($1..$18), in `runs` column order. */
export function runParams(run: RunRecord): unknown[] {
  return [
    run.id,
    run.agent,
    run.workflow,
    run.key,
    run.state,
    run.pausedReason,
    JSON.stringify(run.input),
    encode(run.output),
    encode(run.error),
    run.epoch,
    run.leaseOwner,
    run.leaseExpiresAt,
    run.recoveries,
    run.lastTransitionId,
    JSON.stringify(run.versions),
    JSON.stringify(run.meta),
    run.createdAt,
    run.updatedAt,
  ];
}

/** The parameters of a transition insert, in `transitions` column order. */
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
 * The steps as one array per column (the `unnest` parameters of the step upsert), in `steps`
 * column order from `seq` to `ended_at`. A later step with the same seq replaces an earlier one,
 * as a second save would.
 */
export function stepColumns(steps: readonly StepRecord[]): unknown[][] {
  const bySeq = new Map<number, StepRecord>();
  for (const step of steps) bySeq.set(step.seq, step);
  const columns: unknown[][] = Array.from({ length: 13 }, () => []);
  for (const step of bySeq.values()) {
    const values = [
      step.seq,
      step.kind,
      step.name,
      step.status,
      step.argsDigest,
      encode(step.args),
      encode(step.result),
      encode(step.error),
      JSON.stringify(step.attempts),
      encode(step.heartbeat),
      encode(step.usage),
      step.startedAt,
      step.endedAt,
    ];
    for (const [i, value] of values.entries()) columns[i]?.push(value);
  }
  return columns;
}

/** `name` as a quoted SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
