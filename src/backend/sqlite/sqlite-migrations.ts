import type Database from "better-sqlite3";
import { StorageError } from "../../core/errors.ts";

/**
 * The SQLite schema. One row per run, per transition, per step, per wait and per signal
 * (DESIGN §7); JSON payloads are TEXT columns; the rows map to records as in every SQL backend
 * (`../rows/`). Each version is a migration on top of the one before, applied in one
 * transaction; a released version's DDL never changes.
 */

/** The schema this code writes; stored in `cairn_meta` so later versions can migrate. */
export const SCHEMA_VERSION = 8;

/** DDL of schema version 1 (runs, transitions, steps); every statement is idempotent. */
export const SCHEMA_V1 = `
CREATE TABLE IF NOT EXISTS cairn_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS runs (
  id                 TEXT PRIMARY KEY,
  agent              TEXT NOT NULL,
  workflow           TEXT NOT NULL,
  run_key            TEXT,
  state              TEXT NOT NULL,
  paused_reason      TEXT,
  input              TEXT NOT NULL,
  output             TEXT,
  error              TEXT,
  epoch              INTEGER NOT NULL,
  lease_owner        TEXT,
  lease_expires_at   INTEGER,
  recoveries         INTEGER NOT NULL,
  last_transition_id INTEGER NOT NULL,
  versions           TEXT NOT NULL,
  meta               TEXT NOT NULL,
  created_at         INTEGER NOT NULL,
  updated_at         INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS runs_by_key ON runs (agent, workflow, run_key) WHERE run_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created_at, id);
CREATE INDEX IF NOT EXISTS runs_by_state ON runs (state, created_at);
CREATE INDEX IF NOT EXISTS runs_by_lease_owner ON runs (lease_owner) WHERE lease_owner IS NOT NULL;

CREATE TABLE IF NOT EXISTS transitions (
  run_id        TEXT NOT NULL REFERENCES runs (id),
  id            INTEGER NOT NULL,
  at            INTEGER NOT NULL,
  actor_kind    TEXT NOT NULL,
  actor_id      TEXT NOT NULL,
  from_state    TEXT,
  to_state      TEXT NOT NULL,
  paused_reason TEXT,
  reason        TEXT NOT NULL,
  versions      TEXT NOT NULL,
  PRIMARY KEY (run_id, id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS steps (
  run_id      TEXT NOT NULL REFERENCES runs (id),
  seq         INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  name        TEXT NOT NULL,
  status      TEXT NOT NULL,
  args_digest TEXT NOT NULL,
  args        TEXT,
  result      TEXT,
  error       TEXT,
  attempts    TEXT NOT NULL,
  heartbeat   TEXT,
  usage       TEXT,
  started_at  INTEGER NOT NULL,
  ended_at    INTEGER,
  epoch       INTEGER NOT NULL,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
`;

/**
 * Schema version 2, on top of version 1: waits, signals and stops (parent and child runs,
 * `continueAsNew`), and out-of-line payloads. The key index leaves out runs that were continued,
 * so a successor takes the key over. Signals keep their arrival order in `arrival`, an alias of
 * the rowid (which, unlike an implicit rowid, VACUUM keeps). `blobs` holds step arguments and
 * results above the backend's inline limit, once per content (`digest`, the sha-256 of `text`);
 * the step's column holds `{"$cairnBlob":"sha256:<digest>","bytes":N}`. It is a rowid table:
 * large rows live on overflow pages, which suits a rowid table better than a WITHOUT ROWID one.
 */
export const MIGRATION_V2 = `
ALTER TABLE runs ADD COLUMN parent_run_id TEXT;
ALTER TABLE runs ADD COLUMN parent_close_policy TEXT;
ALTER TABLE runs ADD COLUMN stop_request TEXT;
ALTER TABLE runs ADD COLUMN continued_from TEXT;
ALTER TABLE runs ADD COLUMN continued_to TEXT;
DROP INDEX IF EXISTS runs_by_key;
CREATE UNIQUE INDEX runs_by_key ON runs (agent, workflow, run_key) WHERE run_key IS NOT NULL AND continued_to IS NULL;
CREATE INDEX runs_by_parent ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;
CREATE INDEX runs_stop_requested ON runs (lease_owner) WHERE stop_request IS NOT NULL;

CREATE TABLE waits (
  run_id     TEXT NOT NULL REFERENCES runs (id),
  id         TEXT NOT NULL,
  seq        INTEGER NOT NULL,
  kind       TEXT NOT NULL,
  name       TEXT NOT NULL,
  status     TEXT NOT NULL,
  details    TEXT NOT NULL,
  due_at     INTEGER,
  resolution TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, id)
) WITHOUT ROWID;
CREATE INDEX waits_due ON waits (due_at) WHERE status = 'open' AND due_at IS NOT NULL;
CREATE INDEX waits_by_status ON waits (run_id, status);

CREATE TABLE signals (
  arrival     INTEGER PRIMARY KEY,
  run_id      TEXT NOT NULL REFERENCES runs (id),
  message_id  TEXT NOT NULL,
  name        TEXT NOT NULL,
  payload     TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  consumed_by TEXT,
  UNIQUE (run_id, message_id)
);

CREATE TABLE blobs (
  digest TEXT PRIMARY KEY,
  text   TEXT NOT NULL,
  bytes  INTEGER NOT NULL
);
`;

/**
 * Schema version 3, on top of version 2: effects, usage and acceptance (DESIGN §5, §6). A step of
 * an effect tool holds its `EffectRecord` in `effect` (one row per effect: the step's); a run
 * holds its `RunUsage` (written by the transition that ends it) and an operator's verdict
 * (`acceptance`, set apart from any transition). JSON text, NULL when absent.
 */
export const MIGRATION_V3 = `
ALTER TABLE steps ADD COLUMN effect TEXT;
ALTER TABLE runs ADD COLUMN usage TEXT;
ALTER TABLE runs ADD COLUMN acceptance TEXT;
`;

/**
 * Schema version 4, on top of version 3: the global transition feed (`listTransitionsSince`).
 * `feed_position` numbers every transition in commit order: a transition is inserted with the
 * largest position + 1, inside a transaction that holds the file's write lock (SQLite has one
 * writer at a time, and a writer always works on the newest data), so positions grow in commit
 * order and a reader's snapshot holds exactly the positions up to some number. The transitions a
 * file holds already get positions first, run by run in id order (their commit order is not
 * known, and nobody read them as a feed). `feed_id` in `cairn_meta` names the file's feed (random),
 * so that a cursor of another file (one deleted and made again) is refused, not misread.
 */
export const MIGRATION_V4 = `
ALTER TABLE transitions ADD COLUMN feed_position INTEGER;
UPDATE transitions SET feed_position = numbered.n
  FROM (SELECT run_id, id, row_number() OVER (ORDER BY run_id, id) AS n FROM transitions) AS numbered
  WHERE transitions.run_id = numbered.run_id AND transitions.id = numbered.id;
CREATE UNIQUE INDEX transitions_feed ON transitions (feed_position);
INSERT INTO cairn_meta (key, value) VALUES ('feed_id', lower(hex(randomblob(4))));
`;

/**
 * Schema version 5, on top of version 4: the sweep of child waits (`resolveEndedChildWaits`) reads
 * the open waits of kind `child` from an index of their own (few: the runs waiting for a child
 * now), not from the whole table of waits.
 */
export const MIGRATION_V5 = `
CREATE INDEX waits_open_child ON waits (name) WHERE status = 'open' AND kind = 'child';
`;

/**
 * Schema version 6, on top of version 5: the lineage of forks (`forkRun`, DESIGN §4 "Fork and
 * rerun"). A fork holds where it comes from (`forked_from`, a `ForkOrigin`), its source the forks
 * made from it (`forks`, `ForkRef`s oldest first); JSON text, NULL when absent.
 */
export const MIGRATION_V6 = `
ALTER TABLE runs ADD COLUMN forked_from TEXT;
ALTER TABLE runs ADD COLUMN forks TEXT;
`;

/**
 * Schema version 7, on top of version 6: flow control (DESIGN §7, "Flow control"). A run's
 * concurrency key and limit (NULL: none) and priority; claims go in claim order (the creation
 * time less the priority in aging intervals of 60 s, `PRIORITY_AGING_MS`) from an index on that
 * expression, and the runs holding a slot of a key are counted from an index of the leased keyed runs.
 */
export const MIGRATION_V7 = `
ALTER TABLE runs ADD COLUMN concurrency_key TEXT;
ALTER TABLE runs ADD COLUMN concurrency_limit INTEGER;
ALTER TABLE runs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_claim_order ON runs ((created_at - priority * 60000), id)
  WHERE state IN ('PENDING', 'RESUMING', 'CANCELLING', 'RECONCILING');
CREATE INDEX runs_key_holders ON runs (concurrency_key)
  WHERE concurrency_key IS NOT NULL AND lease_owner IS NOT NULL;
`;

/**
 * Schema version 8, on top of the version before it: schedules and shared rate limits (DESIGN §4
 * *Schedules*, *Rate limits*). A schedule row is its definition and where its ticks stand, written
 * by compare-and-set on `version`; a rate limit row is the time its next slot is free (`next_at`,
 * fractional epoch ms), moved forward by each call that takes a slot. Written apart from version 7,
 * so that it applies whichever of the two a file has.
 */
export const MIGRATION_V8 = `
CREATE TABLE IF NOT EXISTS schedules (
  id             TEXT PRIMARY KEY,
  agent          TEXT NOT NULL,
  workflow       TEXT NOT NULL,
  input          TEXT NOT NULL,
  cron           TEXT,
  time_zone      TEXT,
  every_ms       INTEGER,
  overlap        TEXT NOT NULL,
  catch_up       TEXT NOT NULL,
  catch_up_limit INTEGER NOT NULL,
  paused         INTEGER NOT NULL,
  next_at        INTEGER,
  last_tick_at   INTEGER,
  last_run_id    TEXT,
  pending_at     INTEGER,
  buffered_at    INTEGER,
  version        INTEGER NOT NULL,
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rate_limits (
  name       TEXT PRIMARY KEY,
  next_at    REAL NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;
`;

/** Every schema version and the DDL that brings the version before it there, in order. */
const MIGRATIONS: ReadonlyArray<{ version: number; sql: string }> = [
  { version: 1, sql: SCHEMA_V1 },
  { version: 2, sql: MIGRATION_V2 },
  { version: 3, sql: MIGRATION_V3 },
  { version: 4, sql: MIGRATION_V4 },
  { version: 5, sql: MIGRATION_V5 },
  { version: 6, sql: MIGRATION_V6 },
  { version: 7, sql: MIGRATION_V7 },
  { version: 8, sql: MIGRATION_V8 },
];

/**
 * Brings the file to {@link SCHEMA_VERSION} in one transaction: a new file gets every migration,
 * an older one the migrations it lacks; a file of a newer version is refused.
 */
export function migrate(db: Database.Database, file: string): void {
  db.transaction(() => {
    db.exec("CREATE TABLE IF NOT EXISTS cairn_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID");
    const row = db.prepare<[], { value: string }>("SELECT value FROM cairn_meta WHERE key = 'schema_version'").get();
    const found = row === undefined ? undefined : Number(row.value);
    if (found !== undefined && !(found <= SCHEMA_VERSION)) {
      throw new StorageError(
        `"${file}" has Cairn schema version ${row?.value}, newer than this version of Cairn understands (${SCHEMA_VERSION}); upgrade Cairn or use another file`,
      );
    }
    if (found === SCHEMA_VERSION) return;
    for (const migration of MIGRATIONS) {
      if (found === undefined || migration.version > found) db.exec(migration.sql);
    }
    db.prepare("INSERT OR REPLACE INTO cairn_meta (key, value) VALUES ('schema_version', ?)").run(
      String(SCHEMA_VERSION),
    );
  }).immediate();
}
