import type { SerializedError } from "../core/errors.ts";
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
} from "../core/records.ts";
import type { PausedReason, RunState } from "../core/run-state.ts";

/**
 * The row shapes of the SQL backends (SQLite, PostgreSQL) and their mapping to records, shared so
 * the backends store and read exactly the same thing. JSON columns hold text: SQL NULL is
 * `undefined`, the JSON text `null` is JSON null, so the two stay distinct through a round trip.
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

/**
 * A step's data columns in table order, from `seq` to `ended_at` (without `run_id` and `epoch`,
 * which each backend binds its own way), encoded as every SQL backend stores them.
 */
export function stepValues(step: StepRecord): unknown[] {
  return [
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
}
