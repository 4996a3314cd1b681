import type Database from "better-sqlite3";
import { StorageError } from "../../core/errors.ts";
import type { StepRecord } from "../../core/records.ts";
import { stepValues } from "../sql-rows.ts";

export {
  encode,
  type RunRow,
  rowToRun,
  rowToStep,
  rowToTransition,
  type StepRow,
  type TransitionRow,
  transitionParams,
} from "../sql-rows.ts";

/**
 * The SQLite schema. One row per run, per transition and per step (DESIGN §7); JSON payloads
 * are TEXT columns; the rows map to records as in every SQL backend (`../sql-rows.ts`).
 */

/** The schema this code writes; stored in `cairn_meta` so later versions can migrate. */
export const SCHEMA_VERSION = 1;

/** DDL of schema version 1; every statement is idempotent. */
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
 * The positional parameters of the fenced step upsert: the step's columns in table order (with
 * `epoch` being the writer's), then the run id and epoch of the fence.
 */
export function stepParams(step: StepRecord, epoch: number): unknown[] {
  return [step.runId, ...stepValues(step), epoch, step.runId, epoch];
}

/** Creates schema version 1 on a new file, accepts it on an existing one, refuses a newer one. */
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
    db.exec(SCHEMA_V1);
    if (found === undefined) {
      db.prepare("INSERT INTO cairn_meta (key, value) VALUES ('schema_version', ?)").run(String(SCHEMA_VERSION));
    }
  }).immediate();
}
