import type Database from "better-sqlite3";
import { type SerializedError, StorageError } from "../../core/errors.ts";
import type {
  Actor,
  AttemptRecord,
  Json,
  RunRecord,
  StepKind,
  StepRecord,
  TransitionRecord,
  Usage,
  Versions,
} from "../../core/records.ts";
import type { PausedReason, RunState } from "../../core/run-state.ts";

/**
 * The SQLite schema and the mapping between rows and records. One row per run, per transition
 * and per step (DESIGN §7); JSON payloads are TEXT columns. A NULL JSON column means
 * `undefined`, the text `null` means JSON null, so the two stay distinct through a round trip.
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

/** A `runs` row as better-sqlite3 returns it. */
export interface RunRow {
  id: string;
  agent: string;
  workflow: string;
  run_key: string | null;
  state: string;
  paused_reason: string | null;
  input: string;
  output: string | null;
  error: string | null;
  epoch: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  recoveries: number;
  last_transition_id: number;
  versions: string;
  meta: string;
  created_at: number;
  updated_at: number;
}

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

/** A `steps` row. */
export interface StepRow {
  run_id: string;
  seq: number;
  kind: string;
  name: string;
  status: string;
  args_digest: string;
  args: string | null;
  result: string | null;
  error: string | null;
  attempts: string;
  heartbeat: string | null;
  usage: string | null;
  started_at: number;
  ended_at: number | null;
  epoch: number;
}

/** JSON text for a column, or NULL for `undefined`. */
export function encode(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

function decode<T>(text: string | null): T | undefined {
  return text === null ? undefined : (JSON.parse(text) as T);
}

/** The record of a `runs` row. */
export function rowToRun(row: RunRow): RunRecord {
  return {
    id: row.id,
    agent: row.agent,
    workflow: row.workflow,
    key: row.run_key,
    state: row.state as RunState,
    pausedReason: row.paused_reason as PausedReason | null,
    input: JSON.parse(row.input) as Json,
    output: decode<Json>(row.output),
    error: decode<SerializedError>(row.error),
    epoch: row.epoch,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    recoveries: row.recoveries,
    lastTransitionId: row.last_transition_id,
    versions: JSON.parse(row.versions) as Versions,
    meta: JSON.parse(row.meta) as Record<string, Json>,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
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

/** The record of a `steps` row. */
export function rowToStep(row: StepRow): StepRecord {
  return {
    runId: row.run_id,
    seq: row.seq,
    kind: row.kind as StepKind,
    name: row.name,
    status: row.status as StepRecord["status"],
    argsDigest: row.args_digest,
    args: decode<Json>(row.args),
    result: decode<Json>(row.result),
    error: decode<SerializedError>(row.error),
    attempts: JSON.parse(row.attempts) as AttemptRecord[],
    heartbeat: decode<Json>(row.heartbeat),
    usage: decode<Usage>(row.usage),
    startedAt: row.started_at,
    endedAt: row.ended_at,
    epoch: row.epoch,
  };
}

/**
 * The positional parameters of the fenced step upsert: the step's columns in table order (with
 * `epoch` being the writer's), then the run id and epoch of the fence.
 */
export function stepParams(step: StepRecord, epoch: number): unknown[] {
  return [
    step.runId,
    step.seq,
    step.kind,
    step.name,
    step.status,
    step.argsDigest,
    encode(step.args),
    encode(step.result),
    encode(step.error),
    JSON.stringify(step.attempts),
    encode(step.heartbeat),
    encode(step.usage),
    step.startedAt,
    step.endedAt,
    epoch,
    step.runId,
    epoch,
  ];
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
