import { OWNED_STATES, TERMINAL_STATES } from "../../core/run-state.ts";
import { RUN_COLUMNS as RUN_COLUMN_LIST } from "../rows/run-rows.ts";
import { SIGNAL_COLUMNS } from "../rows/signal-rows.ts";
import { STEP_VALUE_COLUMNS } from "../rows/step-rows.ts";
import { TRANSITION_VALUE_COLUMNS } from "../rows/transition-rows.ts";
import { WAIT_COLUMNS } from "../rows/wait-rows.ts";
import { claimNext, claimRuns } from "./postgres-claim-statements.ts";
import { quoteIdent } from "./postgres-schema.ts";
import { feedKey, type Sql, sql, stateList } from "./postgres-sql.ts";
import { saveStepBatch, saveSteps } from "./postgres-step-statements.ts";
import { moveRuns } from "./postgres-transition-statements.ts";

export type { Sql } from "./postgres-sql.ts";

/**
 * The SQL of `PostgresBackend`, for one schema. Each statement is a named prepared statement
 * (parsed once per connection); its name is a digest of its text, so backends on different
 * schemas can share a pool without their statements colliding.
 *
 * Reads name their columns rather than `SELECT *`: a prepared statement whose result type changes
 * under it (a later migration adding a column while workers run) fails with "cached plan must
 * not change result type", a named list does not change.
 *
 * Single statements are preferred to multi-statement transactions wherever the write allows it:
 * a statement is its own transaction and costs one round trip, where BEGIN … COMMIT costs four.
 */

const OWNED_LIST = stateList(OWNED_STATES);
/**
 * The states of `hasEnded`; the same list, in the same order, as the `runs_stop_requested` index
 * predicate (the planner matches a partial index only on an equal predicate).
 */
const ENDED_LIST = stateList([...TERMINAL_STATES].filter((state) => state !== "INTERRUPTED"));

const RUN_COLUMNS = RUN_COLUMN_LIST.join(", ");
const WAIT_LIST = WAIT_COLUMNS.join(", ");
const SIGNAL_LIST = SIGNAL_COLUMNS.join(", ");

const TRANSITION_COLUMNS = TRANSITION_VALUE_COLUMNS.join(", ");

/**
 * The columns of `steps`, in table order: the run, the encoded step (`effect` last), the epoch
 * before it. Rows written before migration 5; later writes go to the journal.
 */
const STEP_COLUMN_LIST = ["run_id", ...STEP_VALUE_COLUMNS.filter((c) => c !== "effect"), "epoch", "effect"];
const STEP_COLUMNS = STEP_COLUMN_LIST.join(", ");

/** A column's type, for the `recordset` of a batch write. JSON travels as text and is cast back. */
type ColumnType = "text" | "integer" | "bigint" | "boolean" | "json";

const RUN_TYPES: Record<(typeof RUN_COLUMN_LIST)[number], ColumnType> = {
  id: "text",
  agent: "text",
  workflow: "text",
  run_key: "text",
  state: "text",
  paused_reason: "text",
  input: "json",
  output: "json",
  error: "json",
  epoch: "integer",
  lease_owner: "text",
  lease_expires_at: "bigint",
  recoveries: "integer",
  last_transition_id: "integer",
  versions: "json",
  meta: "json",
  parent_run_id: "text",
  parent_close_policy: "text",
  stop_request: "json",
  continued_from: "text",
  continued_to: "text",
  usage: "json",
  acceptance: "json",
  created_at: "bigint",
  updated_at: "bigint",
};

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
] as const;

const TRANSITION_TYPES: ColumnType[] = [
  "text",
  "integer",
  "bigint",
  "text",
  "text",
  "text",
  "text",
  "text",
  "text",
  "json",
];

const WAIT_TYPES: Record<(typeof WAIT_COLUMNS)[number], ColumnType> = {
  run_id: "text",
  id: "text",
  seq: "integer",
  kind: "text",
  name: "text",
  status: "text",
  details: "json",
  due_at: "bigint",
  resolution: "json",
  created_at: "bigint",
};

const SIGNAL_TYPES: Record<(typeof SIGNAL_COLUMNS)[number], ColumnType> = {
  run_id: "text",
  message_id: "text",
  name: "text",
  payload: "json",
  received_at: "bigint",
  consumed_by: "text",
};

/**
 * `json_to_recordset` over the JSON parameter `$first` (an array of objects keyed by column name,
 * `recordsetJson`): the FROM item (aliased `x`), per column the expression that reads it back with
 * its type, and the number of the next parameter. A JSON column travels as its text and is cast
 * back, so that JSON `null` stays apart from SQL NULL.
 */
function recordset(
  columns: readonly string[],
  types: readonly ColumnType[],
  first: number,
): { from: string; values: string[]; next: number } {
  const definitions = columns.map((c, i) => `${c} ${types[i] === "json" ? "text" : types[i]}`);
  return {
    from: `json_to_recordset($${first}::json) AS x (${definitions.join(", ")})`,
    values: columns.map((c, i) => (types[i] === "json" ? `x.${c}::json` : `x.${c}`)),
    next: first + 1,
  };
}

const TRANSITION_LIST: readonly string[] = TRANSITION_VALUE_COLUMNS;

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
       ON CONFLICT (digest) DO NOTHING
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

/** The statements of one schema. */
export interface Statements {
  getRun: Sql;
  /** The run row, locked until the transaction ends (waits for a concurrent writer). */
  lockRun: Sql;
  /**
   * What a batch of transitions writes, locked in id order ({@link lockTransitioning}): the runs
   * $1 and, for those of them that end ($2), their parents and their children that have not
   * ended; each row with the number of runs wanted.
   */
  lockTransitioning: Sql;
  /** Runs by id, not locked. */
  getRuns: Sql;
  /** The run that holds a key: the newest of its `continueAsNew` chain. */
  getRunByKey: Sql;
  getEpoch: Sql;
  createRun: Sql;
  /** {@link createRuns}. */
  createRuns: Sql;
  /** Whole runs ({@link insertRuns}). */
  insertRuns: Sql;
  /** {@link claimNext}. */
  claimNext: Sql;
  /** {@link claimRuns}. */
  claimRuns: Sql;
  /** {@link moveRuns}. */
  moveRuns: Sql;
  setLease: Sql;
  renewLeases: Sql;
  listExpired: Sql;
  listRecoverable: Sql;
  /** A plan's writes ({@link writePlan}). */
  writePlan: Sql;
  listTransitions: Sql;
  /**
   * The feed after the position ($1 feed key, $2 run id, $3 transition id), at most $4 transitions,
   * in (feed_key, run_id, id) order, with `feed_key` as text and the run's agent and workflow.
   */
  feedAfter: Sql;
  /** The feed's last position (feed_key as text, run_id, id), no row when it is empty. */
  feedLatest: Sql;
  /**
   * The fenced upsert of the steps of several runs in one statement (group commit across runs):
   * $1/$2 the runs and the epochs their writers hold, $3 the commit level, $4 the steps as JSON
   * (`batchStepParams`), $5–$7 the blobs. Only the steps of runs whose epoch matches are written;
   * the run ids that come back are those refused.
   */
  saveStepBatch: Sql;
  /** {@link saveSteps}: the fenced journal insert of one run's steps. */
  saveSteps: Sql;
  /**
   * Sets a COMPLETED run's acceptance ($2) when it has none ($1 the run): the rule of
   * `applyAcceptance`, which words the refusal when no row comes back.
   */
  acceptRun: Sql;
  /** A run's step rows written before migration 5 (the journal holds every later write). */
  loadSteps: Sql;
  /** A run's journal entries in the order they were written: epoch, and the steps as JSON text. */
  loadJournal: Sql;
  /** The blobs of these digests ($1 text[]). */
  loadBlobs: Sql;
  /** Every wait of a run, in (seq, id) order. */
  loadWaits: Sql;
  loadWait: Sql;
  /**
   * The open waits of several runs ($1) and their parents' ($2, aligned, null for none) open child
   * waits on them, in (seq, id) order.
   */
  loadEndWaitsOf: Sql;
  /** A run's open signal waits of one name, in (seq, id) order. */
  openSignalWaits: Sql;
  /** The due open waits, locking their runs (skipping runs another transaction holds). */
  pickDue: Sql;
  /**
   * The runs that have not ended with an open `child` wait whose child has ended, in id order, at
   * most $1: those the sweep of child waits resolves a wait of. Not locked.
   */
  endedChildWaitRuns: Sql;
  /** The runs $1 by primary key, locked in id order, skipping those another transaction holds. */
  lockRunsSkipLocked: Sql;
  /** The open `child` waits of the runs $1, in (seq, id) order. */
  openChildWaitsOf: Sql;
  /** The open waits of these runs due at $2, at most $3. */
  dueWaits: Sql;
  nextDueAt: Sql;
  listStopRequested: Sql;
  /** A run's inbox, in arrival order. */
  listSignals: Sql;
  /** A run's unconsumed signals, in arrival order. */
  loadInbox: Sql;
  getSignal: Sql;
  /** How many signals of a run are unread (`unread`). */
  countUnreadSignals: Sql;
  /** The runs matching this WHERE clause (may be empty), newest first, paged by the last two parameters. */
  listRuns(where: string, limitParam: number): Sql;
}

/** The statements of `schema` (unquoted). */
export function statements(schema: string): Statements {
  const s = quoteIdent(schema);
  const runParams = RUN_COLUMN_LIST.map((_, i) => `$${i + 1}`).join(", ");
  const t = RUN_COLUMN_LIST.length;
  return {
    getRun: sql(`SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE id = $1`),
    lockRun: sql(`SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE id = $1 FOR UPDATE`),
    lockTransitioning: lockTransitioning(s),
    getRuns: sql(`SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE id = ANY ($1::text[])`),
    getRunByKey: sql(
      `SELECT ${RUN_COLUMNS} FROM ${s}.runs
       WHERE agent = $1 AND workflow = $2 AND run_key = $3 AND continued_to IS NULL`,
    ),
    getEpoch: sql(`SELECT epoch FROM ${s}.runs WHERE id = $1`),
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
    insertRuns: insertRuns(s),
    createRuns: createRuns(s),
    claimNext: claimNext(s),
    claimRuns: claimRuns(s),
    moveRuns: moveRuns(s),
    setLease: sql(
      `UPDATE ${s}.runs SET epoch = $2, lease_owner = $3, lease_expires_at = $4, updated_at = $5 WHERE id = $1`,
    ),
    // One statement for the whole batch. A renewal only matters to the worker that made it, so it
    // commits without waiting for the WAL flush (see the durability option). The rows are locked
    // in id order first (`locked` yields each row, locked, before the update can reach it), the
    // order every statement that locks several runs keeps, so a renewal never deadlocks with the
    // end of a run whose parent or child the same worker holds.
    renewLeases: sql(
      `WITH commit_level AS (SELECT set_config('synchronous_commit', 'off', true)),
       locked AS (SELECT id FROM ${s}.runs WHERE id = ANY ($2::text[]) ORDER BY id FOR NO KEY UPDATE)
       UPDATE ${s}.runs AS r SET lease_expires_at = $1
       FROM unnest($2::text[], $3::integer[]) AS x (id, epoch), commit_level, locked
       WHERE r.id = x.id AND locked.id = x.id AND r.epoch = x.epoch AND r.lease_owner = $4
       RETURNING r.id`,
    ),
    listExpired: sql(
      // Runs in an owned state, and PENDING runs a worker claimed and did not start (migration 6
      // indexes those, so a backlog of PENDING runs is not read).
      `(SELECT ${RUN_COLUMNS} FROM ${s}.runs
        WHERE state IN (${OWNED_LIST}) AND lease_expires_at IS NOT NULL AND lease_expires_at <= $1
        ORDER BY lease_expires_at, id LIMIT $2)
       UNION ALL
       (SELECT ${RUN_COLUMNS} FROM ${s}.runs
        WHERE state = 'PENDING' AND lease_owner IS NOT NULL AND lease_expires_at <= $1
        ORDER BY lease_expires_at, id LIMIT $2)
       ORDER BY lease_expires_at, id
       LIMIT $2`,
    ),
    listRecoverable: sql(
      `SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE state = 'INTERRUPTED' AND recoveries < $1 ORDER BY updated_at, id LIMIT $2`,
    ),
    writePlan: writePlan(s),
    listTransitions: sql(`SELECT ${TRANSITION_COLUMNS} FROM ${s}.transitions WHERE run_id = $1 ORDER BY id`),
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
    saveStepBatch: saveStepBatch(s),
    saveSteps: saveSteps(s),
    acceptRun: sql(
      `UPDATE ${s}.runs SET acceptance = $2::json
       WHERE id = $1 AND state = 'COMPLETED' AND acceptance IS NULL
       RETURNING ${RUN_COLUMNS}`,
    ),
    loadSteps: sql(`SELECT ${STEP_COLUMNS} FROM ${s}.steps WHERE run_id = $1 ORDER BY seq`),
    loadJournal: sql(`SELECT epoch, steps FROM ${s}.journal WHERE run_id = $1 ORDER BY id`),
    loadBlobs: sql(`SELECT digest, text FROM ${s}.blobs WHERE digest = ANY ($1::text[])`),
    loadWaits: sql(`SELECT ${WAIT_LIST} FROM ${s}.waits WHERE run_id = $1 ORDER BY seq, id`),
    loadWait: sql(`SELECT ${WAIT_LIST} FROM ${s}.waits WHERE run_id = $1 AND id = $2`),
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
    openSignalWaits: sql(
      `SELECT ${WAIT_LIST} FROM ${s}.waits
       WHERE run_id = $1 AND status = 'open' AND kind = 'signal' AND name = $2
       ORDER BY seq, id`,
    ),
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
    dueWaits: sql(
      `SELECT ${WAIT_LIST} FROM ${s}.waits
       WHERE run_id = ANY ($1::text[]) AND status = 'open' AND due_at IS NOT NULL AND due_at <= $2
       ORDER BY due_at, run_id, id
       LIMIT $3`,
    ),
    nextDueAt: sql(`SELECT min(due_at) AS next FROM ${s}.waits WHERE status = 'open' AND due_at IS NOT NULL`),
    listStopRequested: sql(
      `SELECT id FROM ${s}.runs
       WHERE stop_request IS NOT NULL AND state NOT IN (${ENDED_LIST}) AND lease_owner = $1
       ORDER BY created_at, id`,
    ),
    listSignals: sql(`SELECT ${SIGNAL_LIST} FROM ${s}.signals WHERE run_id = $1 ORDER BY arrival`),
    loadInbox: sql(
      `SELECT ${SIGNAL_LIST} FROM ${s}.signals WHERE run_id = $1 AND consumed_by IS NULL ORDER BY arrival`,
    ),
    getSignal: sql(`SELECT ${SIGNAL_LIST} FROM ${s}.signals WHERE run_id = $1 AND message_id = $2`),
    countUnreadSignals: sql(
      `SELECT count(*)::int AS unread FROM ${s}.signals WHERE run_id = $1 AND consumed_by IS NULL`,
    ),
    listRuns: (where, limitParam) =>
      sql(
        `SELECT ${RUN_COLUMNS} FROM ${s}.runs ${where ? `WHERE ${where}` : ""}
         ORDER BY created_at DESC, id DESC LIMIT $${limitParam} OFFSET $${limitParam + 1}`,
      ),
  };
}
