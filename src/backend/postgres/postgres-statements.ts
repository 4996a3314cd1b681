import { createHash } from "node:crypto";
import { OWNED_STATES } from "../../core/run-state.ts";
import { quoteIdent } from "./postgres-schema.ts";

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

/** A named SQL statement. */
export interface Sql {
  name: string;
  text: string;
}

/** A named statement for `text`. */
export function sql(text: string): Sql {
  return { name: `cairn_${createHash("sha256").update(text).digest("hex").slice(0, 24)}`, text };
}

const OWNED_LIST = [...OWNED_STATES].map((s) => `'${s}'`).join(", ");

const RUN_COLUMNS = `id, agent, workflow, run_key, state, paused_reason, input, output, error, epoch,
  lease_owner, lease_expires_at, recoveries, last_transition_id, versions, meta, created_at, updated_at`;

const TRANSITION_COLUMNS =
  "run_id, id, at, actor_kind, actor_id, from_state, to_state, paused_reason, reason, versions";

const STEP_COLUMNS = `run_id, seq, kind, name, status, args_digest, args, result, error, attempts, heartbeat, usage,
  started_at, ended_at, epoch`;

/** The statements of one schema. */
export interface Statements {
  getRun: Sql;
  /** The run row, locked until the transaction ends (waits for a concurrent writer). */
  lockRun: Sql;
  getRunByKey: Sql;
  getEpoch: Sql;
  createRun: Sql;
  notify: Sql;
  claimNext: Sql;
  setLease: Sql;
  renewLeases: Sql;
  listExpired: Sql;
  listRecoverable: Sql;
  writeTransition: Sql;
  listTransitions: Sql;
  saveSteps: Sql;
  loadSteps: Sql;
  /** The runs matching this WHERE clause (may be empty), newest first, paged by the last two parameters. */
  listRuns(where: string, limitParam: number): Sql;
}

/** The statements of `schema` (unquoted). */
export function statements(schema: string): Statements {
  const s = quoteIdent(schema);
  return {
    getRun: sql(`SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE id = $1`),
    lockRun: sql(`SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE id = $1 FOR UPDATE`),
    getRunByKey: sql(`SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE agent = $1 AND workflow = $2 AND run_key = $3`),
    getEpoch: sql(`SELECT epoch FROM ${s}.runs WHERE id = $1`),
    // The run and its first transition in one statement. ON CONFLICT without a target covers both
    // the primary key and the (agent, workflow, key) index; on a conflict nothing is written and
    // the backend finds out which one it was. A concurrent insert of the same key waits for the
    // other transaction and then conflicts, so one key never names two runs.
    createRun: sql(
      `WITH run AS (
         INSERT INTO ${s}.runs (${RUN_COLUMNS})
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
         ON CONFLICT DO NOTHING
         RETURNING id
       )
       INSERT INTO ${s}.transitions (${TRANSITION_COLUMNS})
       SELECT run.id, $19::integer, $20::bigint, $21::text, $22::text, $23::text, $24::text, $25::text, $26::text, $27::json
       FROM run
       RETURNING run_id`,
    ),
    // Must select exactly what `isClaimable` accepts; the rule is still checked on the row found.
    // SKIP LOCKED: a run another worker is claiming right now is passed over, not waited for.
    claimNext: sql(
      `SELECT ${RUN_COLUMNS} FROM ${s}.runs
       WHERE state IN ('PENDING', 'RESUMING')
         AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= $1)
         AND ($2::text[] IS NULL OR agent = ANY ($2::text[]))
       ORDER BY created_at, id
       LIMIT 1
       FOR UPDATE SKIP LOCKED`,
    ),
    setLease: sql(
      `UPDATE ${s}.runs SET epoch = $2, lease_owner = $3, lease_expires_at = $4, updated_at = $5 WHERE id = $1`,
    ),
    // One statement for the whole batch. A renewal only matters to the worker that made it, so it
    // commits without waiting for the WAL flush (see the durability option).
    renewLeases: sql(
      `WITH commit_level AS (SELECT set_config('synchronous_commit', 'off', true))
       UPDATE ${s}.runs AS r SET lease_expires_at = $1
       FROM unnest($2::text[], $3::integer[]) AS x (id, epoch), commit_level
       WHERE r.id = x.id AND r.epoch = x.epoch AND r.lease_owner = $4
       RETURNING r.id`,
    ),
    listExpired: sql(
      `SELECT ${RUN_COLUMNS} FROM ${s}.runs
       WHERE state IN (${OWNED_LIST}) AND lease_expires_at IS NOT NULL AND lease_expires_at <= $1
       ORDER BY lease_expires_at, id
       LIMIT $2`,
    ),
    listRecoverable: sql(
      `SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE state = 'INTERRUPTED' AND recoveries < $1 ORDER BY updated_at, id LIMIT $2`,
    ),
    // The run update and its transition in one statement. Only the JSON columns a patch names are
    // rewritten, so a transition sends no output or error it does not change.
    writeTransition: sql(
      `WITH run AS (
         UPDATE ${s}.runs SET state = $2, paused_reason = $3,
           output = CASE WHEN $4::boolean THEN $5::json ELSE output END,
           error = CASE WHEN $6::boolean THEN $7::json ELSE error END,
           epoch = $8, lease_owner = $9, lease_expires_at = $10, recoveries = $11, last_transition_id = $12,
           updated_at = $13
         WHERE id = $1
         RETURNING id
       )
       INSERT INTO ${s}.transitions (${TRANSITION_COLUMNS})
       SELECT run.id, $14::integer, $15::bigint, $16::text, $17::text, $18::text, $19::text, $20::text, $21::text, $22::json
       FROM run`,
    ),
    listTransitions: sql(`SELECT ${TRANSITION_COLUMNS} FROM ${s}.transitions WHERE run_id = $1 ORDER BY id`),
    // Inside a transaction the notification goes out when it commits; outside, at once.
    notify: sql("SELECT pg_notify($1, $2)"),
    // Fence and upsert in one statement, hence one transaction. FOR SHARE holds the run row
    // against a concurrent claim or takeover until this commits, and a claim that committed first
    // is seen (the row is re-read after the wait), so no step is written under an epoch that has
    // moved on. $3 sets synchronous_commit for this transaction only (NULL: leave it as it is).
    saveSteps: sql(
      `WITH fence AS (
         SELECT id, set_config('synchronous_commit', coalesce($3::text, current_setting('synchronous_commit')), true)
         FROM ${s}.runs WHERE id = $1 AND epoch = $2
         FOR SHARE
       )
       INSERT INTO ${s}.steps (${STEP_COLUMNS})
       SELECT fence.id, x.seq, x.kind, x.name, x.status, x.args_digest, x.args::json, x.result::json, x.error::json,
         x.attempts::json, x.heartbeat::json, x.usage::json, x.started_at, x.ended_at, $2
       FROM fence, unnest($4::integer[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
         $11::text[], $12::text[], $13::text[], $14::text[], $15::bigint[], $16::bigint[])
         AS x (seq, kind, name, status, args_digest, args, result, error, attempts, heartbeat, usage, started_at, ended_at)
       ON CONFLICT (run_id, seq) DO UPDATE SET kind = excluded.kind, name = excluded.name, status = excluded.status,
         args_digest = excluded.args_digest, args = excluded.args, result = excluded.result, error = excluded.error,
         attempts = excluded.attempts, heartbeat = excluded.heartbeat, usage = excluded.usage,
         started_at = excluded.started_at, ended_at = excluded.ended_at, epoch = excluded.epoch
       RETURNING seq`,
    ),
    loadSteps: sql(`SELECT ${STEP_COLUMNS} FROM ${s}.steps WHERE run_id = $1 ORDER BY seq`),
    listRuns: (where, limitParam) =>
      sql(
        `SELECT ${RUN_COLUMNS} FROM ${s}.runs ${where ? `WHERE ${where}` : ""}
         ORDER BY created_at DESC, id DESC LIMIT $${limitParam} OFFSET $${limitParam + 1}`,
      ),
  };
}
