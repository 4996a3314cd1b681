import { RUN_COLUMNS as RUN_COLUMN_LIST } from "../rows/run-rows.ts";
import { SIGNAL_COLUMNS } from "../rows/signal-rows.ts";
import { WAIT_COLUMNS } from "../rows/wait-rows.ts";
import { ENDED_LIST, type Sql, sql } from "./postgres-sql.ts";

/** The SQL of the waits, signals and stops of `PostgresBackend`, and of the sweep of child waits. */

const RUN_COLUMNS = RUN_COLUMN_LIST.join(", ");
const WAIT_LIST = WAIT_COLUMNS.join(", ");
const SIGNAL_LIST = SIGNAL_COLUMNS.join(", ");

/** The statements of the waits role and of the sweep of child waits. */
export interface WaitStatements {
  /** Every wait of a run, in (seq, id) order. */
  loadWaits: Sql;
  loadWait: Sql;
  /** The due open waits, locking their runs (skipping runs another transaction holds). */
  pickDue: Sql;
  /** The open waits of these runs due at $2, at most $3. */
  dueWaits: Sql;
  nextDueAt: Sql;
  /**
   * The runs that have not ended with an open `child` wait whose child has ended, in id order, at
   * most $1: those the sweep of child waits resolves a wait of. Not locked.
   */
  endedChildWaitRuns: Sql;
  /** The runs $1 by primary key, locked in id order, skipping those another transaction holds. */
  lockRunsSkipLocked: Sql;
  /** The open `child` waits of the runs $1, in (seq, id) order. */
  openChildWaitsOf: Sql;
}

/** The statements of {@link WaitStatements} for the quoted schema `s`. */
export function waitStatements(s: string): WaitStatements {
  return {
    loadWaits: sql(`SELECT ${WAIT_LIST} FROM ${s}.waits WHERE run_id = $1 ORDER BY seq, id`),
    loadWait: sql(`SELECT ${WAIT_LIST} FROM ${s}.waits WHERE run_id = $1 AND id = $2`),
    // LIMIT counts locked rows only: a skipped run does not use up the batch. Ordered by due_at
    // alone, so the rows come in `waits_due` order and a backlog of due waits is not sorted whole.
    pickDue: sql(
      `SELECT ${RUN_COLUMN_LIST.map((c) => `r.${c}`).join(", ")}
       FROM ${s}.waits AS w JOIN ${s}.runs AS r ON r.id = w.run_id
       WHERE w.status = 'open' AND w.due_at IS NOT NULL AND w.due_at <= $1
       ORDER BY w.due_at
       LIMIT $2
       FOR UPDATE OF r SKIP LOCKED`,
    ),
    dueWaits: sql(
      `SELECT ${WAIT_LIST} FROM ${s}.waits
       WHERE run_id = ANY ($1::text[]) AND status = 'open' AND due_at IS NOT NULL AND due_at <= $2
       ORDER BY due_at, run_id, id
       LIMIT $3`,
    ),
    nextDueAt: sql(`SELECT min(due_at) AS next FROM ${s}.waits WHERE status = 'open' AND due_at IS NOT NULL`),
    // From the partial index waits_open_child (the runs waiting for a child now), each child and
    // run by primary key.
    endedChildWaitRuns: sql(
      `SELECT DISTINCT w.run_id FROM ${s}.waits AS w
       JOIN ${s}.runs AS c ON c.id = w.name
       JOIN ${s}.runs AS r ON r.id = w.run_id
       WHERE w.status = 'open' AND w.kind = 'child'
         AND c.state IN (${ENDED_LIST}) AND r.state NOT IN (${ENDED_LIST})
       ORDER BY w.run_id
       LIMIT $1`,
    ),
    // By primary key alone, so a row that changed before the lock is not left out by the re-check.
    lockRunsSkipLocked: sql(
      `SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE id = ANY ($1::text[]) ORDER BY id FOR UPDATE SKIP LOCKED`,
    ),
    openChildWaitsOf: sql(
      `SELECT ${WAIT_LIST} FROM ${s}.waits
       WHERE run_id = ANY ($1::text[]) AND status = 'open' AND kind = 'child'
       ORDER BY seq, id`,
    ),
  };
}

/** The statements of the signals role. */
export interface SignalStatements {
  /** A run's open signal waits of one name, in (seq, id) order. */
  openSignalWaits: Sql;
  /** A run's inbox, in arrival order. */
  listSignals: Sql;
  /** A run's unconsumed signals, in arrival order. */
  loadInbox: Sql;
  getSignal: Sql;
  /** How many signals of a run are unread (`unread`). */
  countUnreadSignals: Sql;
}

/** The statements of {@link SignalStatements} for the quoted schema `s`. */
export function signalStatements(s: string): SignalStatements {
  return {
    openSignalWaits: sql(
      `SELECT ${WAIT_LIST} FROM ${s}.waits
       WHERE run_id = $1 AND status = 'open' AND kind = 'signal' AND name = $2
       ORDER BY seq, id`,
    ),
    listSignals: sql(`SELECT ${SIGNAL_LIST} FROM ${s}.signals WHERE run_id = $1 ORDER BY arrival`),
    loadInbox: sql(
      `SELECT ${SIGNAL_LIST} FROM ${s}.signals WHERE run_id = $1 AND consumed_by IS NULL ORDER BY arrival`,
    ),
    getSignal: sql(`SELECT ${SIGNAL_LIST} FROM ${s}.signals WHERE run_id = $1 AND message_id = $2`),
    countUnreadSignals: sql(
      `SELECT count(*)::int AS unread FROM ${s}.signals WHERE run_id = $1 AND consumed_by IS NULL`,
    ),
  };
}

/** The statements of the stops role. */
export interface StopStatements {
  listStopRequested: Sql;
}

/** The statements of {@link StopStatements} for the quoted schema `s`. */
export function stopStatements(s: string): StopStatements {
  return {
    listStopRequested: sql(
      `SELECT id FROM ${s}.runs
       WHERE stop_request IS NOT NULL AND state NOT IN (${ENDED_LIST}) AND lease_owner = $1
       ORDER BY created_at, id`,
    ),
  };
}
