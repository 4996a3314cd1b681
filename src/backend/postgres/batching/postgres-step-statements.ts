import { type Sql, sql } from "../postgres-sql.ts";

/**
 * The step writes of `PostgresBackend` (DESIGN §7): the fenced journal inserts that carry every
 * step a worker records, one statement and one commit each. `saveStepBatch` writes the steps of
 * several runs (a worker's group commit), `saveSteps` those of one run. Both share the fence, the
 * lock, the commit level and the blobs.
 */

/** The step writes' commit level: $3 for this transaction only (NULL: leave it as it is). */
const STEP_COMMIT_LEVEL = `set_config('synchronous_commit', coalesce($3::text, current_setting('synchronous_commit')), true) AS level`;

/**
 * The step writes' blobs ($5–$7), written only when some run passed the fence; a blob stored
 * already keeps its text, and is locked (the no-op update) until this commits, so that a prune
 * cannot delete it between here and the commit of the step that refers to it (`postgres-prune.ts`).
 * The blobs come in digest order (`journalWrite`): writers lock them in one order.
 */
function fencedBlobs(s: string): string {
  return `new_blobs AS (
       INSERT INTO ${s}.blobs (digest, text, bytes)
       SELECT b.digest, b.text, b.bytes
       FROM unnest($5::text[], $6::text[], $7::bigint[]) AS b (digest, text, bytes)
       WHERE EXISTS (SELECT 1 FROM fence)
       ON CONFLICT (digest) DO UPDATE SET bytes = EXCLUDED.bytes
     )`;
}

/**
 * Fence and append to the step journal in one statement, hence one transaction: one row per run
 * whose epoch matches, holding the steps it wrote (migration 5). FOR SHARE holds each run row
 * against a concurrent claim or takeover until this commits (every move of an epoch locks the
 * row FOR UPDATE first), and a claim that committed first is seen (the row is re-read after the
 * wait), so no step is written under an epoch that has moved on. The rows are locked in id
 * order, the order of every statement that locks several runs. $3 sets synchronous_commit for
 * this transaction only (NULL: leave it as it is). The blobs are written by the same
 * statement, only when some run passed the fence; a blob stored already is left as it is. The
 * runs the fence refused come back: exactly those whose steps were not written — none, nearly
 * always, so the reply is one message rather than a row per run (about 1 ms of the worker's
 * CPU per 1,000 steps of the 50 × 20 bench went into reading those rows).
 */
export function saveStepBatch(s: string): Sql {
  return sql(
    `WITH fence AS (
       SELECT runs.id, runs.epoch,
         ${STEP_COMMIT_LEVEL}
       FROM ${s}.runs JOIN unnest($1::text[], $2::integer[]) AS r (run_id, epoch) ON runs.id = r.run_id AND runs.epoch = r.epoch
       ORDER BY runs.id
       FOR SHARE OF runs
     ), ${fencedBlobs(s)}, new_entries AS (
       INSERT INTO ${s}.journal (run_id, epoch, steps)
       SELECT fence.id, fence.epoch, x.steps
       FROM json_to_recordset($4::json) AS x (run_id text, steps json) JOIN fence ON fence.id = x.run_id
     )
     SELECT r.run_id FROM unnest($1::text[]) AS r (run_id) WHERE NOT EXISTS (SELECT 1 FROM fence WHERE fence.id = r.run_id)`,
  );
}

/**
 * {@link saveStepBatch} for a batch that holds one run, the usual case of a run driven alone: the
 * same fence, lock, commit level and blobs, the entry bound as it is ($4, the steps' JSON) rather
 * than read from a recordset joined to an array of runs: about 90 rather than 110 µs of the
 * server's time (measured alone, asynchronous commit). $1/$2 the run and its writer's epoch,
 * $5–$7 the blobs. The run id comes back when its steps were written.
 */
export function saveSteps(s: string): Sql {
  return sql(
    `WITH fence AS (
       SELECT runs.id, runs.epoch,
         ${STEP_COMMIT_LEVEL}
       FROM ${s}.runs WHERE runs.id = $1 AND runs.epoch = $2
       FOR SHARE OF runs
     ), ${fencedBlobs(s)}
     INSERT INTO ${s}.journal (run_id, epoch, steps)
     SELECT fence.id, fence.epoch, $4::json FROM fence
     RETURNING run_id`,
  );
}
