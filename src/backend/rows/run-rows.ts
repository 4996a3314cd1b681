import type { SerializedError } from "../../core/errors.ts";
import type {
  AcceptanceRecord,
  ForkOrigin,
  ForkRef,
  Json,
  ParentClosePolicy,
  RunRecord,
  RunUsage,
  StopRequest,
  Versions,
} from "../../core/records.ts";
import type { PausedReason, RunState } from "../../core/run-state.ts";
import { decode, encode } from "./json-columns.ts";

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
  forked_from: string | null;
  forks: string | null;
  concurrency_key: string | null;
  concurrency_limit: number | null;
  priority: number;
  created_at: number;
  updated_at: number;
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
    // Left out when absent, as a run made by `createRun` has them.
    ...(row.forked_from === null ? {} : { forkedFrom: JSON.parse(row.forked_from) as ForkOrigin }),
    ...(row.forks === null ? {} : { forks: JSON.parse(row.forks) as ForkRef[] }),
    ...(row.concurrency_key === null
      ? {}
      : { concurrencyKey: row.concurrency_key, concurrencyLimit: Number(row.concurrency_limit) }),
    ...(Number(row.priority) === 0 ? {} : { priority: Number(row.priority) }),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

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
  "forked_from",
  "forks",
  "concurrency_key",
  "concurrency_limit",
  "priority",
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
    kept("forkedFrom") ? undefined : encode(run.forkedFrom),
    kept("forks") ? undefined : encode(run.forks),
    run.concurrencyKey ?? null,
    run.concurrencyKey === undefined ? null : (run.concurrencyLimit ?? null),
    run.priority ?? 0,
    run.createdAt,
    run.updatedAt,
  ];
}
