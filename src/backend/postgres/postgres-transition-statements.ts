import { RUN_COLUMNS as RUN_COLUMN_LIST } from "../rows/run-rows.ts";
import { TRANSITION_VALUE_COLUMNS } from "../rows/transition-rows.ts";
import { WAIT_COLUMNS } from "../rows/wait-rows.ts";
import { ENDED_LIST, type Sql, sql } from "./postgres-sql.ts";

/**
 * The SQL of the transitions of `PostgresBackend` (the one-statement moves of a batch are in
 * `batching/`): the locks and reads of a batch of transitions, a run's history, the global feed.
 */

const RUN_COLUMNS = RUN_COLUMN_LIST.join(", ");
const WAIT_LIST = WAIT_COLUMNS.join(", ");
const TRANSITION_COLUMNS = TRANSITION_VALUE_COLUMNS.join(", ");
const TRANSITION_LIST: readonly string[] = TRANSITION_VALUE_COLUMNS;

/** The statements of the transitions role and the transition feed. */
export interface TransitionStatements {
  /**
   * What a batch of transitions writes, locked in id order ({@link lockTransitioning}): the runs
   * $1 and, for those of them that end ($2), their parents and their children that have not
   * ended; each row with the number of runs wanted.
   */
  lockTransitioning: Sql;
  listTransitions: Sql;
  /**
   * The open waits of several runs ($1) and their parents' ($2, aligned, null for none) open child
   * waits on them, in (seq, id) order.
   */
  loadEndWaitsOf: Sql;
  /**
   * The feed after the position ($1 feed key, $2 run id, $3 transition id), at most $4 transitions,
   * in (feed_key, run_id, id) order, with `feed_key` as text and the run's agent and workflow.
   */
  feedAfter: Sql;
  /** The feed's last position (feed_key as text, run_id, id), no row when it is empty. */
  feedLatest: Sql;
}

/** The statements of {@link TransitionStatements} for the quoted schema `s`. */
export function transitionStatements(s: string): TransitionStatements {
  return {
    lockTransitioning: lockTransitioning(s),
    listTransitions: sql(`SELECT ${TRANSITION_COLUMNS} FROM ${s}.transitions WHERE run_id = $1 ORDER BY id`),
    // Two index lookups (waits_pkey by run) rather than one WHERE with an OR, which read the whole
    // table. A wait both halves find (a parent's wait on a child, when both end in one batch)
    // comes back twice: the caller keys waits by run and id.
    loadEndWaitsOf: sql(
      `SELECT ${WAIT_LIST} FROM ${s}.waits
       WHERE status = 'open' AND run_id = ANY ($1::text[])
       UNION ALL
       SELECT ${WAIT_LIST} FROM ${s}.waits
       WHERE status = 'open' AND kind = 'child' AND (run_id, name) IN (SELECT * FROM unnest($2::text[], $1::text[]))
       ORDER BY seq, id`,
    ),
    // The feed: only keys below the snapshot's xmin, whose transactions have all ended (every
    // transaction still running, or starting later, has an id, hence writes a key, of xmin or more).
    feedAfter: sql(
      `SELECT ${TRANSITION_LIST.map((c) => `t.${c}`).join(", ")}, t.feed_key::text AS feed_key,
         r.agent AS run_agent, r.workflow AS run_workflow
       FROM ${s}.transitions AS t JOIN ${s}.runs AS r ON r.id = t.run_id
       WHERE (t.feed_key, t.run_id, t.id) > ($1::xid8, $2::text COLLATE "C", $3::integer)
         AND t.feed_key < pg_snapshot_xmin(pg_current_snapshot())
       ORDER BY t.feed_key, t.run_id, t.id
       LIMIT $4`,
    ),
    feedLatest: sql(
      `SELECT feed_key::text AS feed_key, run_id, id FROM ${s}.transitions
       WHERE feed_key < pg_snapshot_xmin(pg_current_snapshot())
       ORDER BY feed_key DESC, run_id DESC, id DESC
       LIMIT 1`,
    ),
  };
}

/**
 * Locks what a batch of transitions writes (`transitionsIn`): the runs $1 that exist and, for
 * those of them that end ($2), their parents and their children that have not ended. Each row
 * comes with `wanted`, how many runs the statement chose, so the caller can check that every one
 * came back locked.
 *
 * The runs are chosen first (`wanted`, a union of index lookups: primary key, primary key,
 * `runs_by_parent`) and then locked by primary key alone, in id order (LockRows runs above the
 * sort). PostgreSQL checks the condition of a locking read again on a row that changed while the
 * read waited for its lock, and leaves the row out when the check fails: locking the rows the
 * union chose in one condition, as this statement did until issue 21, left out a parent whose
 * pause committed meanwhile (and even the ending run, its lease renewed meanwhile), under the
 * nested-loop plan a table with some history gets. The child's end was then planned without its
 * parent and the parent's wait stayed open. The only condition here is `id = ANY` of an array
 * computed once (an InitPlan, which the check reuses), which no update changes. A child that
 * ended while this waited still comes back, locked: the planners skip ended children by state.
 */
function lockTransitioning(s: string): Sql {
  return sql(
    `WITH wanted AS MATERIALIZED (
       SELECT r.id FROM ${s}.runs AS r WHERE r.id = ANY ($1::text[])
       UNION
       SELECT p.parent_run_id FROM ${s}.runs AS p WHERE p.id = ANY ($2::text[]) AND p.parent_run_id IS NOT NULL
       UNION
       SELECT c.id FROM ${s}.runs AS c WHERE c.parent_run_id = ANY ($2::text[]) AND c.state NOT IN (${ENDED_LIST})
     )
     SELECT ${RUN_COLUMNS}, (SELECT count(*) FROM wanted)::integer AS wanted
     FROM ${s}.runs
     WHERE id = ANY (ARRAY(SELECT id FROM wanted))
     ORDER BY id
     FOR UPDATE`,
  );
}
