import type Database from "better-sqlite3";
import { OWNED_STATES, TERMINAL_STATES } from "../../core/run-state.ts";
import { RUN_COLUMNS, type RunRow } from "../rows/run-rows.ts";
import { SIGNAL_COLUMNS, type SignalRow } from "../rows/signal-rows.ts";
import { STEP_VALUE_COLUMNS, type StepRow } from "../rows/step-rows.ts";
import type { TransitionRow } from "../rows/transition-rows.ts";
import { WAIT_COLUMNS, type WaitRow } from "../rows/wait-rows.ts";
import { RUNNABLE_STATES } from "../rules/lease-rules.ts";
import { hasEnded } from "../rules/plan.ts";

/**
 * The SQL of `SqliteBackend`, by role: every statement is prepared once per connection, in
 * `init`, and used by the role files (`sqlite-runs.ts`, `sqlite-leases.ts`, …) that run them.
 */

/** A transition of the feed: the row, its position, and its run's agent and workflow. */
export type FeedRow = TransitionRow & { feed_position: number; run_agent: string; run_workflow: string };

/** A better-sqlite3 connection. */
export type Db = Database.Database;
/** A prepared statement. */
export type Stmt<P extends unknown[] = unknown[], R = unknown> = Database.Statement<P, R>;

/** `'A', 'B'` for an IN list of states (constants, never user input). */
function stateList(states: Iterable<string>): string {
  return [...states].map((s) => `'${s}'`).join(", ");
}

const OWNED_LIST = stateList(OWNED_STATES);
const RUNNABLE_LIST = stateList(RUNNABLE_STATES);
/**
 * The runs `t` holding a slot of their concurrency key at `now` (`holdsSlot`): leased, and
 * RUNNING / COMPENSATING or runnable under a live lease. Implies `lease_owner IS NOT NULL`, so
 * the index runs_key_holders serves it.
 */
function holding(t: string, now: string): string {
  return `${t}.lease_owner IS NOT NULL AND (${t}.state IN ('RUNNING', 'COMPENSATING')
    OR (${t}.state IN (${RUNNABLE_LIST}) AND ${t}.lease_expires_at > ${now}))`;
}
/** States in which a run has ended for its waits, its parent and its children (`hasEnded`). */
const ENDED_LIST = stateList([...TERMINAL_STATES].filter(hasEnded));

/** The prepared statements of one connection, by role (each prepared by its `…Statements` function). */
export type Statements = RunStatements &
  LeaseStatements &
  TransitionStatements &
  JournalStatements &
  WaitStatements &
  SignalStatements &
  StopStatements;

const placeholders = (columns: readonly string[]): string => columns.map(() => "?").join(", ");

/** Prepares the statements once per connection (in `init`) for reuse by every call. */
export function prepareStatements(db: Db): Statements {
  return {
    ...runStatements(db),
    ...leaseStatements(db),
    ...transitionStatements(db),
    ...journalStatements(db),
    ...waitStatements(db),
    ...signalStatements(db),
    ...stopStatements(db),
  };
}

/** The statements of runs: read, insert and update a run's row, and its open children. */
export interface RunStatements {
  getRun: Stmt<[string], RunRow>;
  /** The run that holds a key now: a run that was continued handed the key to its successor. */
  getRunByKey: Stmt<[string, string, string], RunRow>;
  runExists: Stmt<[string], { id: string }>;
  /** Every column, in `RUN_COLUMNS` order (`runValues`). */
  insertRun: Stmt;
  /** Every column but `id`, then `id` (`runValues(run).slice(1)`, `run.id`). */
  updateRun: Stmt;
  /** Children of a run that have not ended, oldest first. */
  openChildren: Stmt<[string], RunRow>;
}

function runStatements(db: Db): RunStatements {
  return {
    getRun: db.prepare<[string], RunRow>("SELECT * FROM runs WHERE id = ?"),
    // The terms match the partial index runs_by_key, which SQLite then uses.
    getRunByKey: db.prepare<[string, string, string], RunRow>(
      "SELECT * FROM runs WHERE agent = ? AND workflow = ? AND run_key = ? AND continued_to IS NULL",
    ),
    runExists: db.prepare<[string], { id: string }>("SELECT id FROM runs WHERE id = ?"),
    insertRun: db.prepare(`INSERT INTO runs (${RUN_COLUMNS.join(", ")}) VALUES (${placeholders(RUN_COLUMNS)})`),
    updateRun: db.prepare(
      `UPDATE runs SET ${RUN_COLUMNS.slice(1)
        .map((c) => `${c} = ?`)
        .join(", ")} WHERE id = ?`,
    ),
    openChildren: db.prepare<[string], RunRow>(
      `SELECT * FROM runs WHERE parent_run_id = ? AND state NOT IN (${ENDED_LIST}) ORDER BY created_at, id`,
    ),
  };
}

/** The statements of leases: claims, renewals and the runs whose lease lapsed. */
export interface LeaseStatements {
  claimNext: Stmt<[number, string | null, string | null, number], RunRow>;
  /** Runs other than the second parameter holding a slot of the key at the third (`holdsSlot`). */
  keyHolders: Stmt<[string, string, number], { n: number }>;
  setLease: Stmt;
  renewLease: Stmt<[number, string, number, string]>;
  listExpired: Stmt<[number, number], RunRow>;
  listRecoverable: Stmt<[number, number], RunRow>;
}

function leaseStatements(db: Db): LeaseStatements {
  return {
    // Must select exactly what `isClaimable` accepts; the rule is still checked on the row found.
    // In claim order, walking the index runs_claim_order (named: on a small or fresh table the
    // planner would sort every runnable run, counting each one's key), so that the claim stops at
    // the first run it may take; a keyed run only while its key has a free slot (`holdsSlot`;
    // the claim's transaction is the only writer, so the count is exact).
    claimNext: db.prepare<[number, string | null, string | null, number], RunRow>(
      `SELECT * FROM runs INDEXED BY runs_claim_order WHERE state IN (${RUNNABLE_LIST})
         AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= ?)
         AND (? IS NULL OR agent IN (SELECT value FROM json_each(?)))
         AND (concurrency_key IS NULL OR concurrency_limit > (SELECT count(*) FROM runs AS h
           WHERE h.concurrency_key = runs.concurrency_key AND ${holding("h", "?")}))
       ORDER BY (created_at - priority * 60000), id LIMIT 1`,
    ),
    keyHolders: db.prepare<[string, string, number], { n: number }>(
      `SELECT count(*) AS n FROM runs AS h WHERE h.concurrency_key = ? AND h.id <> ? AND ${holding("h", "?")}`,
    ),
    setLease: db.prepare(
      "UPDATE runs SET epoch = ?, lease_owner = ?, lease_expires_at = ?, updated_at = ? WHERE id = ?",
    ),
    renewLease: db.prepare<[number, string, number, string]>(
      "UPDATE runs SET lease_expires_at = ? WHERE id = ? AND epoch = ? AND lease_owner = ?",
    ),
    listExpired: db.prepare<[number, number], RunRow>(
      `SELECT * FROM runs WHERE lease_owner IS NOT NULL AND state IN (${OWNED_LIST}, 'PENDING')
         AND lease_expires_at IS NOT NULL AND lease_expires_at <= ?
       ORDER BY lease_expires_at, id LIMIT ?`,
    ),
    listRecoverable: db.prepare<[number, number], RunRow>(
      "SELECT * FROM runs WHERE state = 'INTERRUPTED' AND recoveries < ? ORDER BY updated_at, id LIMIT ?",
    ),
  };
}

/** The statements of transitions: a run's history and the global feed. */
export interface TransitionStatements {
  insertTransition: Stmt;
  listTransitions: Stmt<[string], TransitionRow>;
  /** The transitions after a feed position, in feed order, at most a number, with their runs' agent and workflow. */
  feedAfter: Stmt<[number, number], FeedRow>;
  /** The largest feed position given (a pruned transition's too), 0 when none. */
  feedLatest: Stmt<[], number | null>;
}

/** The largest feed position given so far: held by a transition, or by a pruned one (`feed_floor`). */
const FEED_LATEST = `max(coalesce((SELECT max(feed_position) FROM transitions), 0),
  coalesce((SELECT CAST(value AS INTEGER) FROM cairn_meta WHERE key = 'feed_floor'), 0))`;

function transitionStatements(db: Db): TransitionStatements {
  return {
    // The next feed position: every write runs under the write lock, so positions follow commits.
    // `feed_floor` (cairn_meta) is the largest position a prune deleted: no position is given twice.
    insertTransition: db.prepare(
      `INSERT INTO transitions (run_id, id, at, actor_kind, actor_id, from_state, to_state, paused_reason, reason, versions,
         feed_position)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (${FEED_LATEST}) + 1)`,
    ),
    listTransitions: db.prepare<[string], TransitionRow>("SELECT * FROM transitions WHERE run_id = ? ORDER BY id"),
    feedAfter: db.prepare<[number, number], FeedRow>(
      `SELECT t.*, r.agent AS run_agent, r.workflow AS run_workflow
       FROM transitions AS t JOIN runs AS r ON r.id = t.run_id
       WHERE t.feed_position > ? ORDER BY t.feed_position LIMIT ?`,
    ),
    feedLatest: db.prepare<[], number | null>(`SELECT ${FEED_LATEST}`).pluck(),
  };
}

/** The statements of the journal: steps and the blobs they refer to, under the epoch's fence. */
export interface JournalStatements {
  getEpoch: Stmt<[string], { epoch: number }>;
  saveStep: Stmt;
  loadSteps: Stmt<[string], StepRow>;
  /** Digest, text, bytes; a blob stored already is left as it is. */
  insertBlob: Stmt<[string, string, number]>;
  /** The blobs of a JSON array of digests. */
  loadBlobs: Stmt<[string], { digest: string; text: string }>;
}

function journalStatements(db: Db): JournalStatements {
  return {
    getEpoch: db.prepare<[string], { epoch: number }>("SELECT epoch FROM runs WHERE id = ?"),
    // The fence and the write are one statement, hence one transaction: the row is written only
    // while the run is at the writer's epoch, and the write lock is taken before the check.
    saveStep: db.prepare(
      `INSERT INTO steps (run_id, ${STEP_VALUE_COLUMNS.join(", ")}, epoch)
       SELECT ?, ${placeholders(STEP_VALUE_COLUMNS)}, ? WHERE EXISTS (SELECT 1 FROM runs WHERE id = ? AND epoch = ?)
       ON CONFLICT (run_id, seq) DO UPDATE SET ${[...STEP_VALUE_COLUMNS.slice(1), "epoch"]
         .map((c) => `${c} = excluded.${c}`)
         .join(", ")}`,
    ),
    loadSteps: db.prepare<[string], StepRow>("SELECT * FROM steps WHERE run_id = ? ORDER BY seq"),
    insertBlob: db.prepare<[string, string, number]>(
      "INSERT INTO blobs (digest, text, bytes) VALUES (?, ?, ?) ON CONFLICT (digest) DO NOTHING",
    ),
    loadBlobs: db.prepare<[string], { digest: string; text: string }>(
      "SELECT digest, text FROM blobs WHERE digest IN (SELECT value FROM json_each(?))",
    ),
  };
}

/** The statements of waits: a run's waits, the due ones and those the sweep of child waits resolves. */
export interface WaitStatements {
  getWait: Stmt<[string, string], WaitRow>;
  /** A run's waits in (seq, id) order. */
  listWaits: Stmt<[string], WaitRow>;
  openWaits: Stmt<[string], WaitRow>;
  /** The parent's open `child` wait on a child run (parent id, child id). */
  openChildWait: Stmt<[string, string], WaitRow>;
  /**
   * The runs that have not ended with an open `child` wait whose child has ended, in id order, at
   * most a number: the runs the sweep of child waits resolves a wait of.
   */
  endedChildWaitRuns: Stmt<[number], string>;
  /** A run's open `child` waits, in (seq, id) order. */
  openChildWaits: Stmt<[string], WaitRow>;
  /** Open waits due at a time, soonest first (now, limit). */
  dueWaits: Stmt<[number, number], WaitRow>;
  nextDueAt: Stmt<[], number | null>;
  /** Values in `WAIT_COLUMNS` order. */
  upsertWait: Stmt;
}

function waitStatements(db: Db): WaitStatements {
  return {
    getWait: db.prepare<[string, string], WaitRow>("SELECT * FROM waits WHERE run_id = ? AND id = ?"),
    listWaits: db.prepare<[string], WaitRow>("SELECT * FROM waits WHERE run_id = ? ORDER BY seq, id"),
    openWaits: db.prepare<[string], WaitRow>(
      "SELECT * FROM waits WHERE run_id = ? AND status = 'open' ORDER BY seq, id",
    ),
    openChildWait: db.prepare<[string, string], WaitRow>(
      "SELECT * FROM waits WHERE run_id = ? AND status = 'open' AND kind = 'child' AND name = ? ORDER BY seq, id LIMIT 1",
    ),
    // From the partial index waits_open_child (the runs waiting for a child now), each child and
    // run by primary key. The order is forced (CROSS JOIN): without statistics SQLite would start
    // from the ended runs, nearly the whole table.
    endedChildWaitRuns: db
      .prepare<[number], string>(
        `SELECT DISTINCT w.run_id FROM waits AS w INDEXED BY waits_open_child
         CROSS JOIN runs AS c ON c.id = w.name
         CROSS JOIN runs AS r ON r.id = w.run_id
         WHERE w.status = 'open' AND w.kind = 'child'
           AND c.state IN (${ENDED_LIST}) AND r.state NOT IN (${ENDED_LIST})
         ORDER BY w.run_id LIMIT ?`,
      )
      .pluck(),
    openChildWaits: db.prepare<[string], WaitRow>(
      "SELECT * FROM waits WHERE run_id = ? AND status = 'open' AND kind = 'child' ORDER BY seq, id",
    ),
    // The terms match the partial index waits_due.
    dueWaits: db.prepare<[number, number], WaitRow>(
      `SELECT * FROM waits WHERE status = 'open' AND due_at IS NOT NULL AND due_at <= ?
       ORDER BY due_at, run_id, seq, id LIMIT ?`,
    ),
    nextDueAt: db
      .prepare<[], number | null>("SELECT MIN(due_at) FROM waits WHERE status = 'open' AND due_at IS NOT NULL")
      .pluck(),
    upsertWait: db.prepare(
      `INSERT OR REPLACE INTO waits (${WAIT_COLUMNS.join(", ")}) VALUES (${placeholders(WAIT_COLUMNS)})`,
    ),
  };
}

/** The statements of signals: a run's inbox and the waits a signal resolves. */
export interface SignalStatements {
  /** A run's open signal waits of one name, in (seq, id) order. */
  openSignalWaits: Stmt<[string, string], WaitRow>;
  getSignal: Stmt<[string, string], SignalRow>;
  /** A run's inbox in arrival order. */
  listSignals: Stmt<[string], SignalRow>;
  unconsumedSignals: Stmt<[string], SignalRow>;
  /** How many signals of a run are unread (`consumed_by` NULL). */
  countUnreadSignals: Stmt<[string], number>;
  /** Values in `SIGNAL_COLUMNS` order; a signal stored already keeps its place and gets `consumed_by`. */
  upsertSignal: Stmt;
}

function signalStatements(db: Db): SignalStatements {
  return {
    openSignalWaits: db.prepare<[string, string], WaitRow>(
      "SELECT * FROM waits WHERE run_id = ? AND status = 'open' AND kind = 'signal' AND name = ? ORDER BY seq, id",
    ),
    getSignal: db.prepare<[string, string], SignalRow>("SELECT * FROM signals WHERE run_id = ? AND message_id = ?"),
    listSignals: db.prepare<[string], SignalRow>("SELECT * FROM signals WHERE run_id = ? ORDER BY arrival"),
    unconsumedSignals: db.prepare<[string], SignalRow>(
      "SELECT * FROM signals WHERE run_id = ? AND consumed_by IS NULL ORDER BY arrival",
    ),
    countUnreadSignals: db
      .prepare<[string], number>("SELECT count(*) FROM signals WHERE run_id = ? AND consumed_by IS NULL")
      .pluck(),
    upsertSignal: db.prepare(
      `INSERT INTO signals (${SIGNAL_COLUMNS.join(", ")}) VALUES (${placeholders(SIGNAL_COLUMNS)})
       ON CONFLICT (run_id, message_id) DO UPDATE SET consumed_by = excluded.consumed_by`,
    ),
  };
}

/** The statements of stops: the runs a worker holds that were asked to stop. */
export interface StopStatements {
  listStopRequested: Stmt<[string], string>;
}

function stopStatements(db: Db): StopStatements {
  return {
    // The terms match the partial index runs_stop_requested.
    listStopRequested: db
      .prepare<[string], string>(
        "SELECT id FROM runs WHERE lease_owner = ? AND stop_request IS NOT NULL ORDER BY created_at, id",
      )
      .pluck(),
  };
}
