import { RUN_COLUMNS as RUN_COLUMN_LIST } from "../rows/run-rows.ts";
import { TRANSITION_VALUE_COLUMNS } from "../rows/transition-rows.ts";
import { RUN_TYPES, recordset, TRANSITION_TYPES } from "./postgres-recordset.ts";
import { type Sql, sql } from "./postgres-sql.ts";

/** The SQL of the runs of `PostgresBackend`: reading, creating and listing runs, and acceptance. */

const RUN_COLUMNS = RUN_COLUMN_LIST.join(", ");
const TRANSITION_COLUMNS = TRANSITION_VALUE_COLUMNS.join(", ");
const TRANSITION_LIST: readonly string[] = TRANSITION_VALUE_COLUMNS;

/** The statements of the runs role. */
export interface RunStatements {
  getRun: Sql;
  /** The run row, locked until the transaction ends (waits for a concurrent writer). */
  lockRun: Sql;
  /** Runs by id, not locked. */
  getRuns: Sql;
  /** The run that holds a key: the newest of its `continueAsNew` chain. */
  getRunByKey: Sql;
  createRun: Sql;
  /** {@link createRuns}. */
  createRuns: Sql;
  /**
   * Sets a COMPLETED run's acceptance ($2) when it has none ($1 the run): the rule of
   * `applyAcceptance`, which words the refusal when no row comes back.
   */
  acceptRun: Sql;
  /** The runs matching this WHERE clause (may be empty), newest first, paged by the last two parameters. */
  listRuns(where: string, limitParam: number): Sql;
}

/** The statements of {@link RunStatements} for the quoted schema `s`. */
export function runStatements(s: string): RunStatements {
  const runParams = RUN_COLUMN_LIST.map((_, i) => `$${i + 1}`).join(", ");
  const t = RUN_COLUMN_LIST.length;
  return {
    getRun: sql(`SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE id = $1`),
    lockRun: sql(`SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE id = $1 FOR UPDATE`),
    getRuns: sql(`SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE id = ANY ($1::text[])`),
    getRunByKey: sql(
      `SELECT ${RUN_COLUMNS} FROM ${s}.runs
       WHERE agent = $1 AND workflow = $2 AND run_key = $3 AND continued_to IS NULL`,
    ),
    // The run and its first transition in one statement. ON CONFLICT without a target covers both
    // the primary key and the (agent, workflow, key) index; on a conflict nothing is written and
    // the backend finds out which one it was. A concurrent insert of the same key waits for the
    // other transaction and then conflicts, so one key never names two runs. The wake-up
    // ($t+10 channel, $t+11 payload) is sent only when the run was written, and goes out when the
    // statement commits, so a woken worker finds the run.
    createRun: sql(
      `WITH run AS (
         INSERT INTO ${s}.runs (${RUN_COLUMNS})
         VALUES (${runParams})
         ON CONFLICT DO NOTHING
         RETURNING id
       ), first AS (
         INSERT INTO ${s}.transitions (${TRANSITION_COLUMNS}, feed_key)
         SELECT run.id, $${t + 1}::integer, $${t + 2}::bigint, $${t + 3}::text, $${t + 4}::text, $${t + 5}::text,
           $${t + 6}::text, $${t + 7}::text, $${t + 8}::text, $${t + 9}::json, pg_current_xact_id()
         FROM run
         RETURNING run_id
       )
       SELECT run_id, pg_notify($${t + 10}::text, $${t + 11}::text) FROM first`,
    ),
    createRuns: createRuns(s),
    acceptRun: sql(
      `UPDATE ${s}.runs SET acceptance = $2::json
       WHERE id = $1 AND state = 'COMPLETED' AND acceptance IS NULL
       RETURNING ${RUN_COLUMNS}`,
    ),
    listRuns: (where, limitParam) =>
      sql(
        `SELECT ${RUN_COLUMNS} FROM ${s}.runs ${where ? `WHERE ${where}` : ""}
         ORDER BY created_at DESC, id DESC LIMIT $${limitParam} OFFSET $${limitParam + 1}`,
      ),
  };
}

/**
 * `createRun` for several runs in one statement (one commit): the run columns, the transition
 * columns, then the channel and one wake-up payload per transition. A run whose id or key is taken
 * is not written, nor is its transition or its wake-up; the run ids that come back are those written.
 */
function createRuns(s: string): Sql {
  const runs = recordset(
    RUN_COLUMN_LIST,
    RUN_COLUMN_LIST.map((c) => RUN_TYPES[c]),
    1,
  );
  const transitions = recordset([...TRANSITION_LIST, "wake"], [...TRANSITION_TYPES, "text"], runs.next);
  return sql(
    `WITH new_runs AS (
       INSERT INTO ${s}.runs (${RUN_COLUMNS})
       SELECT ${runs.values.join(", ")} FROM ${runs.from}
       ON CONFLICT DO NOTHING
       RETURNING id
     ), first AS (
       INSERT INTO ${s}.transitions (${TRANSITION_COLUMNS}, feed_key)
       SELECT ${transitions.values.slice(0, -1).join(", ")}, pg_current_xact_id()
       FROM ${transitions.from} JOIN new_runs ON new_runs.id = x.run_id
       RETURNING run_id
     )
     SELECT first.run_id, pg_notify($${transitions.next}::text, x.wake)
     FROM first JOIN ${transitions.from} ON x.run_id = first.run_id`,
  );
}
