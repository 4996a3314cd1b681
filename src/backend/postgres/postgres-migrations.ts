import { createHash } from "node:crypto";
import type pg from "pg";
import { StorageError } from "../../core/errors.ts";
import { OWNED_STATES } from "../../core/run-state.ts";
import { quoteIdent } from "./postgres-sql.ts";

/**
 * Versioned migrations of the PostgreSQL schema. Every Cairn table lives in one schema (the
 * backend's `schema` option), beside a `cairn_migrations` table that records which versions were
 * applied. Migrations only ever get appended: version N's SQL never changes once released.
 */

/** One schema migration. */
export interface Migration {
  version: number;
  name: string;
  /** The DDL, for the schema whose quoted name is given. */
  sql(schema: string): string;
}

const OWNED_LIST = [...OWNED_STATES].map((s) => `'${s}'`).join(", ");
// Written out rather than derived: a migration's SQL must never change once released, whatever
// later code does to these sets.
const RUNNABLE_LIST = "'PENDING', 'RESUMING', 'CANCELLING'";
/** The runnable states from migration 3 on: an operator's reconciled run is claimed too. */
const RUNNABLE_LIST_V3 = "'PENDING', 'RESUMING', 'CANCELLING', 'RECONCILING'";
/** The states of `hasEnded` (terminal, INTERRUPTED excepted). */
const ENDED_LIST = "'COMPLETED', 'FAILED', 'BLOCKED', 'CANCELLED', 'COMPENSATED'";

/** Every migration, in order. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "runs, transitions and steps",
    // Identifiers compare bytewise (COLLATE "C"), as in SQLite and in JavaScript, so that the
    // tie-breaks of every ORDER BY agree across backends. fillfactor leaves room on each page of
    // `runs` for HOT updates: a lease renewal changes no indexed column.
    sql: (s) => `
CREATE TABLE ${s}.runs (
  id                 TEXT COLLATE "C" PRIMARY KEY,
  agent              TEXT COLLATE "C" NOT NULL,
  workflow           TEXT COLLATE "C" NOT NULL,
  run_key            TEXT COLLATE "C",
  state              TEXT NOT NULL,
  paused_reason      TEXT,
  input              JSON NOT NULL,
  output             JSON,
  error              JSON,
  epoch              INTEGER NOT NULL,
  lease_owner        TEXT,
  lease_expires_at   BIGINT,
  recoveries         INTEGER NOT NULL,
  last_transition_id INTEGER NOT NULL,
  versions           JSON NOT NULL,
  meta               JSON NOT NULL,
  created_at         BIGINT NOT NULL,
  updated_at         BIGINT NOT NULL
) WITH (fillfactor = 80);
CREATE UNIQUE INDEX runs_by_key ON ${s}.runs (agent, workflow, run_key) WHERE run_key IS NOT NULL;
CREATE INDEX runs_by_created ON ${s}.runs (created_at, id);
CREATE INDEX runs_by_state ON ${s}.runs (state, created_at, id);
-- Claims: the runnable runs, oldest first.
CREATE INDEX runs_runnable ON ${s}.runs (created_at, id) WHERE state IN ('PENDING', 'RESUMING');
-- Lease expiry: the runs a worker owns. lease_expires_at is deliberately not indexed, so that a
-- renewal stays a HOT update; the owned runs are few (bounded by the workers' concurrency).
CREATE INDEX runs_owned ON ${s}.runs (state) WHERE state IN (${OWNED_LIST});

CREATE TABLE ${s}.transitions (
  run_id        TEXT COLLATE "C" NOT NULL REFERENCES ${s}.runs (id),
  id            INTEGER NOT NULL,
  at            BIGINT NOT NULL,
  actor_kind    TEXT NOT NULL,
  actor_id      TEXT NOT NULL,
  from_state    TEXT,
  to_state      TEXT NOT NULL,
  paused_reason TEXT,
  reason        TEXT NOT NULL,
  versions      JSON NOT NULL,
  PRIMARY KEY (run_id, id)
);

CREATE TABLE ${s}.steps (
  run_id      TEXT COLLATE "C" NOT NULL REFERENCES ${s}.runs (id),
  seq         INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  name        TEXT NOT NULL,
  status      TEXT NOT NULL,
  args_digest TEXT NOT NULL,
  args        JSON,
  result      JSON,
  error       JSON,
  attempts    JSON NOT NULL,
  heartbeat   JSON,
  usage       JSON,
  started_at  BIGINT NOT NULL,
  ended_at    BIGINT,
  epoch       INTEGER NOT NULL,
  PRIMARY KEY (run_id, seq)
);
`,
  },
  {
    version: 2,
    name: "waits, signals, stops, child runs, continueAsNew and out-of-line payloads",
    // New nullable columns without defaults: a catalog change, no table rewrite. Every index is
    // built in this transaction, under the migration's lock, before any worker of this version
    // writes.
    sql: (s) => `
ALTER TABLE ${s}.runs
  ADD COLUMN parent_run_id       TEXT COLLATE "C",
  ADD COLUMN parent_close_policy TEXT,
  ADD COLUMN stop_request        JSON,
  ADD COLUMN continued_from      TEXT COLLATE "C",
  ADD COLUMN continued_to        TEXT COLLATE "C";
-- A continueAsNew successor takes its predecessor's key over: the key names the newest run of
-- the chain, the one nothing continues.
DROP INDEX ${s}.runs_by_key;
CREATE UNIQUE INDEX runs_by_key ON ${s}.runs (agent, workflow, run_key)
  WHERE run_key IS NOT NULL AND continued_to IS NULL;
-- Claims take CANCELLING runs too (a cancel asked of a paused run, or of a lost worker's run).
DROP INDEX ${s}.runs_runnable;
CREATE INDEX runs_runnable ON ${s}.runs (created_at, id) WHERE state IN (${RUNNABLE_LIST});
-- The children of a run: listRuns({ parentRunId }) and the parent-close policy when it ends.
CREATE INDEX runs_by_parent ON ${s}.runs (parent_run_id, id) WHERE parent_run_id IS NOT NULL;
-- listStopRequested: the open runs with a stop request (few: a request is carried out, or it
-- suspends an orphan until someone resumes or cancels it). lease_owner is deliberately not indexed,
-- so that a claim stays a HOT update.
CREATE INDEX runs_stop_requested ON ${s}.runs (created_at, id)
  WHERE stop_request IS NOT NULL AND state NOT IN (${ENDED_LIST});

CREATE TABLE ${s}.waits (
  run_id     TEXT COLLATE "C" NOT NULL REFERENCES ${s}.runs (id),
  id         TEXT COLLATE "C" NOT NULL,
  seq        INTEGER NOT NULL,
  kind       TEXT NOT NULL,
  name       TEXT COLLATE "C" NOT NULL,
  status     TEXT NOT NULL,
  details    JSON NOT NULL,
  due_at     BIGINT,
  resolution JSON,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (run_id, id)
);
-- The timer loop: the earliest open wait that comes due (fireDueWaits, nextDueAt).
CREATE INDEX waits_due ON ${s}.waits (due_at) WHERE status = 'open' AND due_at IS NOT NULL;

-- A run's inbox. arrival orders it (the order in which the run's lock let the signals in); an
-- upsert that only marks a signal consumed keeps it.
CREATE TABLE ${s}.signals (
  run_id      TEXT COLLATE "C" NOT NULL REFERENCES ${s}.runs (id),
  message_id  TEXT COLLATE "C" NOT NULL,
  name        TEXT COLLATE "C" NOT NULL,
  payload     JSON NOT NULL,
  received_at BIGINT NOT NULL,
  consumed_by TEXT COLLATE "C",
  arrival     BIGSERIAL NOT NULL,
  PRIMARY KEY (run_id, message_id)
);
CREATE INDEX signals_by_arrival ON ${s}.signals (run_id, arrival);

-- Step arguments and results above the backend's inline limit, once per content: digest is the
-- sha-256 (hex) of text, and the step's column holds {"$cairnBlob":"sha256:<digest>","bytes":N}.
-- TEXT, not JSON: the text was JSON when written and is never looked into by the server.
CREATE TABLE ${s}.blobs (
  digest TEXT COLLATE "C" PRIMARY KEY,
  text   TEXT NOT NULL,
  bytes  BIGINT NOT NULL
);
`,
  },
  {
    version: 3,
    name: "effects, run usage and acceptance; RECONCILING runs are claimable",
    // Nullable columns without defaults again: catalog changes only. The claim index is rebuilt
    // with the runnable states of this version, listed in the order the claim query lists them
    // (the planner matches a partial index only on an equal predicate).
    sql: (s) => `
ALTER TABLE ${s}.steps ADD COLUMN effect JSON;
ALTER TABLE ${s}.runs
  ADD COLUMN usage      JSON,
  ADD COLUMN acceptance JSON;
DROP INDEX ${s}.runs_runnable;
CREATE INDEX runs_runnable ON ${s}.runs (created_at, id) WHERE state IN (${RUNNABLE_LIST_V3});
`,
  },
  {
    version: 4,
    name: "the global transition feed",
    // feed_key orders the feed (see `feedAfter` in postgres-transition-statements.ts): the xid8 of the
    // inserting transaction, or more (PostgreSQL 13 or later). The constant default fills the rows
    // there are without rewriting the table: they come first, run by run, before anything written
    // later. Then the default becomes the inserting transaction's id, for a process of an older
    // version still writing while this one starts (its rows are never skipped; newer code writes
    // the key itself).
    sql: (s) => `
ALTER TABLE ${s}.transitions ADD COLUMN feed_key xid8 NOT NULL DEFAULT '0';
ALTER TABLE ${s}.transitions ALTER COLUMN feed_key SET DEFAULT pg_current_xact_id();
CREATE INDEX transitions_feed ON ${s}.transitions (feed_key, run_id, id);
`,
  },
  {
    version: 5,
    name: "the step journal: one row per run and commit",
    // Step writes append one row per run and commit (the steps that commit carries, as written)
    // instead of inserting a step's start record and rewriting it when the step ends: one row
    // insert per run and round of steps, no update. `steps` keeps the rows written before this
    // version; `loadSteps` reads them first and the journal's entries over them, in id order.
    sql: (s) => `
CREATE TABLE ${s}.journal (
  run_id TEXT COLLATE "C" NOT NULL,
  id     BIGINT GENERATED ALWAYS AS IDENTITY,
  epoch  INTEGER NOT NULL,
  steps  JSON NOT NULL,
  PRIMARY KEY (run_id, id)
);
`,
  },
  {
    version: 6,
    name: "claimed runs not started and open child waits are indexed",
    // The recovery sweep finds PENDING runs a worker claimed and died before starting (their lease
    // held by a process that is gone), and the sweep of child waits (resolveEndedChildWaits) the
    // open child waits, few (the runs waiting for a child now): each from an index of its own
    // rather than every PENDING run or the whole table of waits.
    sql: (s) => `
CREATE INDEX runs_claimed_pending ON ${s}.runs (lease_expires_at, id) WHERE state = 'PENDING' AND lease_owner IS NOT NULL;
CREATE INDEX waits_open_child ON ${s}.waits (name) WHERE status = 'open' AND kind = 'child';
`,
  },
  {
    version: 7,
    name: "the lineage of forks",
    // A fork holds where it comes from (a ForkOrigin), its source the forks made from it (ForkRefs,
    // oldest first), both written by forkRun in one transaction; NULL when absent.
    sql: (s) => `
ALTER TABLE ${s}.runs
  ADD COLUMN forked_from JSON,
  ADD COLUMN forks       JSON;
`,
  },
  {
    version: 8,
    name: "flow control: concurrency keys and priorities",
    // A run's concurrency key and limit (NULL: none) and priority. Claims go in claim order, the
    // creation time less the priority in aging intervals of 60 s (PRIORITY_AGING_MS), from an
    // index of the runnable runs on that expression, which replaces runs_runnable. The runs that
    // hold a slot of a key are counted from an index of the leased keyed runs, and a key's runnable
    // runs ranked in claim order from runs_by_concurrency_key.
    sql: (s) => `
ALTER TABLE ${s}.runs
  ADD COLUMN concurrency_key   TEXT COLLATE "C",
  ADD COLUMN concurrency_limit INTEGER,
  ADD COLUMN priority          INTEGER NOT NULL DEFAULT 0;
DROP INDEX ${s}.runs_runnable;
CREATE INDEX runs_claim_order ON ${s}.runs ((created_at - priority::bigint * 60000), id)
  WHERE state IN (${RUNNABLE_LIST_V3});
CREATE INDEX runs_key_holders ON ${s}.runs (concurrency_key)
  WHERE concurrency_key IS NOT NULL AND lease_owner IS NOT NULL;
CREATE INDEX runs_by_concurrency_key ON ${s}.runs (concurrency_key, (created_at - priority::bigint * 60000), id)
  WHERE concurrency_key IS NOT NULL AND state IN (${RUNNABLE_LIST_V3});
`,
  },
  {
    version: 9,
    name: "schedules and shared rate limits",
    // A schedule row: its definition and where its ticks stand, written by compare-and-set on
    // version. A rate limit row: when its next slot is free (epoch ms), moved on in one UPDATE.
    sql: (s) => `
CREATE TABLE ${s}.schedules (
  id             TEXT COLLATE "C" PRIMARY KEY,
  agent          TEXT COLLATE "C" NOT NULL,
  workflow       TEXT COLLATE "C" NOT NULL,
  input          JSON NOT NULL,
  cron           TEXT,
  time_zone      TEXT,
  every_ms       BIGINT,
  overlap        TEXT NOT NULL,
  catch_up       TEXT NOT NULL,
  catch_up_limit INTEGER NOT NULL,
  paused         BOOLEAN NOT NULL,
  next_at        BIGINT,
  last_tick_at   BIGINT,
  last_run_id    TEXT COLLATE "C",
  pending_at     BIGINT,
  buffered_at    BIGINT,
  version        INTEGER NOT NULL,
  created_at     BIGINT NOT NULL,
  updated_at     BIGINT NOT NULL
);
CREATE TABLE ${s}.rate_limits (
  name       TEXT COLLATE "C" PRIMARY KEY,
  next_at    DOUBLE PRECISION NOT NULL,
  updated_at BIGINT NOT NULL
);
`,
  },
];

/** The schema version this code reads and writes. */
export const SCHEMA_VERSION = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);

/** What {@link applyMigrations} did: the version found and the version left. */
export interface MigrationResult {
  from: number;
  to: number;
}

/** The first key of every Cairn advisory lock ("CAIR"); the second names the schema. */
const LOCK_CLASS = 0x43414952;

function lockKey(schema: string): number {
  return createHash("sha256").update(`cairn:migrate:${schema}`).digest().readInt32BE(0);
}

/**
 * The applied version of `schema`: 0 when the schema or its `cairn_migrations` table does not
 * exist. Reads the catalog first, so a role without CREATE rights can check a current schema.
 * The catalog is read with a query rather than `to_regclass`: a name lookup may answer from this
 * connection's cache, which does not yet know what another process created while this one waited
 * for the migration lock.
 */
export async function schemaVersion(client: pg.PoolClient, schema: string): Promise<number> {
  const { rowCount } = await client.query(
    `SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relname = 'cairn_migrations'`,
    [schema],
  );
  if (!rowCount) return 0;
  const { rows } = await client.query<{ version: number | null }>(
    `SELECT max(version) AS version FROM ${quoteIdent(schema)}.cairn_migrations`,
  );
  return rows[0]?.version ?? 0;
}

function newerError(schema: string, found: number): StorageError {
  return new StorageError(
    `schema "${schema}" has Cairn schema version ${found}, newer than this version of Cairn understands (${SCHEMA_VERSION}); upgrade Cairn, or point the schema option at another schema`,
  );
}

/**
 * Brings `schema` to {@link SCHEMA_VERSION}: creates the schema when missing and applies every
 * migration newer than the one recorded, all in one transaction under an advisory lock, so two
 * processes starting together apply each migration once. Refuses a schema newer than this code.
 * `begin` opens the transaction (the backend's BEGIN, with its bound on idle gaps).
 */
export async function applyMigrations(client: pg.PoolClient, schema: string, begin: string): Promise<MigrationResult> {
  const current = await schemaVersion(client, schema);
  if (current > SCHEMA_VERSION) throw newerError(schema, current);
  if (current === SCHEMA_VERSION) return { from: current, to: current };
  const q = quoteIdent(schema);
  await client.query(begin);
  try {
    await client.query("SELECT pg_advisory_xact_lock($1, $2)", [LOCK_CLASS, lockKey(schema)]);
    // Read again under the lock: another process may have migrated while this one waited.
    const from = await schemaVersion(client, schema);
    if (from > SCHEMA_VERSION) throw newerError(schema, from);
    if (from === 0) {
      const exists = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
      if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${q}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${q}.cairn_migrations (
           version    INTEGER PRIMARY KEY,
           name       TEXT NOT NULL,
           applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         )`,
      );
    }
    for (const migration of MIGRATIONS) {
      if (migration.version <= from) continue;
      await client.query(migration.sql(q));
      await client.query(`INSERT INTO ${q}.cairn_migrations (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ]);
    }
    await client.query("COMMIT");
    return { from, to: SCHEMA_VERSION };
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}

/**
 * Checks that `schema` is at {@link SCHEMA_VERSION} without changing anything (`migrate: false`);
 * otherwise throws a `StorageError` that says what to do.
 */
export async function checkSchema(client: pg.PoolClient, schema: string): Promise<void> {
  const found = await schemaVersion(client, schema);
  if (found === SCHEMA_VERSION) return;
  if (found > SCHEMA_VERSION) throw newerError(schema, found);
  const fix =
    "apply the migrations first: start a PostgresBackend with migrate: true (the default) or call its migrate() method, as a role that may create tables in the schema";
  throw new StorageError(
    found === 0
      ? `schema "${schema}" has no Cairn tables (no migration recorded in ${schema}.cairn_migrations) and the backend was started with migrate: false; ${fix}`
      : `schema "${schema}" is at Cairn schema version ${found}, this version of Cairn needs ${SCHEMA_VERSION} and the backend was started with migrate: false; ${fix}`,
  );
}
