import { RUN_COLUMNS as RUN_COLUMN_LIST } from "../rows/run-rows.ts";
import { SIGNAL_COLUMNS } from "../rows/signal-rows.ts";
import { TRANSITION_VALUE_COLUMNS } from "../rows/transition-rows.ts";
import { WAIT_COLUMNS } from "../rows/wait-rows.ts";
import { RUN_TYPES, recordset, SIGNAL_TYPES, TRANSITION_TYPES, WAIT_TYPES } from "./postgres-recordset.ts";
import { feedKey, type Sql, sql } from "./postgres-sql.ts";

/** The SQL that writes a plan of the planners (`../rules/`) for `PostgresBackend` (`postgres-plans.ts`). */

const RUN_COLUMNS = RUN_COLUMN_LIST.join(", ");
const WAIT_LIST = WAIT_COLUMNS.join(", ");
const SIGNAL_LIST = SIGNAL_COLUMNS.join(", ");
const TRANSITION_COLUMNS = TRANSITION_VALUE_COLUMNS.join(", ");
const TRANSITION_LIST: readonly string[] = TRANSITION_VALUE_COLUMNS;

/**
 * The JSON columns of `runs`, each written by a plan only when its value changed (a run's input,
 * meta and versions never do): `writePlan` takes one "changed" flag array per column, in this order.
 */
export const RUN_JSON_COLUMNS = [
  "input",
  "output",
  "error",
  "versions",
  "meta",
  "stop_request",
  "usage",
  "acceptance",
  "forked_from",
  "forks",
] as const;

/** The statements that write a plan. */
export interface PlanStatements {
  /** A plan's writes ({@link writePlan}). */
  writePlan: Sql;
  /** Whole runs ({@link insertRuns}). */
  insertRuns: Sql;
}

/** The statements of {@link PlanStatements} for the quoted schema `s`. */
export function planStatements(s: string): PlanStatements {
  return {
    writePlan: writePlan(s),
    insertRuns: insertRuns(s),
  };
}

/**
 * The one statement that writes a plan (see `applyPlan`): full-row updates of runs, transitions
 * inserted, waits and signals upserted, and the wake-ups, which `pg_notify` sends when the
 * transaction commits, and the journal entries (with their blobs) of the steps that ride with the
 * plan's transitions. Each part is a `recordset` over one JSON parameter, so the statement is
 * the same whatever the plan holds and is prepared once per connection; an empty part writes
 * nothing. The parts touch different tables (or different rows), so the unspecified order in which
 * PostgreSQL runs the WITH parts does not matter; the foreign keys are checked at the end.
 *
 * Parameters ($1–$4, each `recordsetJson`): the runs (their columns, then one "changed" flag per
 * {@link RUN_JSON_COLUMNS}, named `<column>_changed`), the transitions, the waits, the signals;
 * then the channel and the payloads; then the journal entries and the blobs (`batchStepParams`).
 */
function writePlan(s: string): Sql {
  const runTypes = RUN_COLUMN_LIST.map((c) => RUN_TYPES[c]);
  const runs = recordset(
    [...RUN_COLUMN_LIST, ...RUN_JSON_COLUMNS.map((c) => `${c}_changed`)],
    [...runTypes, ...RUN_JSON_COLUMNS.map(() => "boolean" as const)],
    1,
  );
  const assignments = RUN_COLUMN_LIST.slice(1).map((c) =>
    RUN_TYPES[c] === "json" ? `${c} = CASE WHEN x.${c}_changed THEN x.${c}::json ELSE r.${c} END` : `${c} = x.${c}`,
  );
  const transitions = recordset(TRANSITION_LIST, TRANSITION_TYPES, runs.next);
  const waits = recordset(
    WAIT_COLUMNS,
    WAIT_COLUMNS.map((c) => WAIT_TYPES[c]),
    transitions.next,
  );
  const signals = recordset(
    SIGNAL_COLUMNS,
    SIGNAL_COLUMNS.map((c) => SIGNAL_TYPES[c]),
    waits.next,
  );
  const channel = signals.next;
  // After the wake-ups: the journal entries of the steps that ride with the plan's transitions,
  // and their blobs (`batchStepParams`). Fenced by the plan: its runs are locked, the planner
  // checked each transition's fence, and each entry carries the epoch its transition leaves.
  const entries = channel + 2;
  return sql(
    `WITH new_blobs AS (
       INSERT INTO ${s}.blobs (digest, text, bytes)
       SELECT b.digest, b.text, b.bytes
       FROM unnest($${entries + 1}::text[], $${entries + 2}::text[], $${entries + 3}::bigint[]) AS b (digest, text, bytes)
       ON CONFLICT (digest) DO UPDATE SET bytes = EXCLUDED.bytes
     ), new_entries AS (
       INSERT INTO ${s}.journal (run_id, epoch, steps)
       SELECT x.run_id, x.epoch, x.steps FROM json_to_recordset($${entries}::json) AS x (run_id text, epoch integer, steps json)
     ), updated_runs AS (
       UPDATE ${s}.runs AS r SET ${assignments.join(", ")}
       FROM ${runs.from}
       WHERE r.id = x.id
     ), new_transitions AS (
       INSERT INTO ${s}.transitions (${TRANSITION_COLUMNS}, feed_key)
       SELECT ${transitions.values.join(", ")}, ${feedKey(s, "x.run_id")} FROM ${transitions.from}
     ), upserted_waits AS (
       INSERT INTO ${s}.waits (${WAIT_LIST})
       SELECT ${waits.values.join(", ")} FROM ${waits.from}
       ON CONFLICT (run_id, id) DO UPDATE SET
         ${WAIT_COLUMNS.slice(2)
           .map((c) => `${c} = excluded.${c}`)
           .join(", ")}
     ), upserted_signals AS (
       INSERT INTO ${s}.signals (${SIGNAL_LIST})
       SELECT ${signals.values.join(", ")} FROM ${signals.from}
       ON CONFLICT (run_id, message_id) DO UPDATE SET consumed_by = excluded.consumed_by
     )
     SELECT count(pg_notify($${channel}, wake))::integer AS sent FROM unnest($${channel + 1}::text[]) AS wake`,
  );
}

/** Inserts whole runs (a `continueAsNew` successor); returns the ids written (a taken id or key writes nothing). */
function insertRuns(s: string): Sql {
  const runs = recordset(
    RUN_COLUMN_LIST,
    RUN_COLUMN_LIST.map((c) => RUN_TYPES[c]),
    1,
  );
  return sql(
    `INSERT INTO ${s}.runs (${RUN_COLUMNS})
     SELECT ${runs.values.join(", ")} FROM ${runs.from}
     ON CONFLICT DO NOTHING
     RETURNING id`,
  );
}
