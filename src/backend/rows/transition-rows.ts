import type { Actor, TransitionRecord, Versions } from "../../core/records.ts";
import type { PausedReason, RunState } from "../../core/run-state.ts";

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

/** The columns of `transitionParams`, in order. */
export const TRANSITION_VALUE_COLUMNS = [
  "run_id",
  "id",
  "at",
  "actor_kind",
  "actor_id",
  "from_state",
  "to_state",
  "paused_reason",
  "reason",
  "versions",
] as const;
