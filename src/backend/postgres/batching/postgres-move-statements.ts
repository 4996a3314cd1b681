import { RUN_COLUMNS } from "../../rows/run-rows.ts";
import { TRANSITION_VALUE_COLUMNS } from "../../rows/transition-rows.ts";
import { ENDED_LIST, feedKey, type Sql, sql } from "../postgres-sql.ts";

/**
 * The one-statement transitions of `PostgresBackend` (DESIGN §7), `moveRuns`: a batch of
 * transitions that need nothing but their runs' rows, written without a transaction of several
 * round trips (`postgres-move-batch.ts` chooses them and reads the result).
 */

/**
 * The columns of a request in `moveRuns`'s recordset ($1), in order (`simpleMoveParams`): the
 * run, the fence's epoch, the move, the transition's fields, then the patch: each JSON column's
 * new text with a flag saying whether it is set (`output`, `error`, `usage`), the recovery
 * counter's reset and count, clearing the stop request and letting the lease go; `ends` when the
 * run ends (`hasEnded(to)`), and the wake-up payload (NULL: none).
 */
export const MOVE_COLUMNS = [
  ["run_id", "text"],
  ["epoch", "integer"],
  ["from_state", "text"],
  ["to_state", "text"],
  ["paused_reason", "text"],
  ["at", "bigint"],
  ["actor_kind", "text"],
  ["actor_id", "text"],
  ["reason", "text"],
  ["versions", "text"],
  ["set_output", "boolean"],
  ["output", "text"],
  ["set_error", "boolean"],
  ["error", "text"],
  ["set_usage", "boolean"],
  ["usage", "text"],
  ["reset_recoveries", "boolean"],
  ["count_recovery", "boolean"],
  ["clear_stop", "boolean"],
  ["release_lease", "boolean"],
  ["ends", "boolean"],
  ["wake", "text"],
] as const;

/**
 * Transitions of several runs in one statement and one commit, the arithmetic of
 * `applyTransition` for a request fenced by its epoch (state, paused reason, the next transition
 * id, `updated_at`, and the patch), for the runs whose move needs nothing but their row:
 *
 * - the run is at the request's epoch and in its `from` state (the fence and the state check);
 *   the rows are locked in id order, as every statement that locks several runs does;
 * - the statement sees the run's last transition, so the new one's feed key ({@link feedKey})
 *   stays above it (as in `claimRuns`);
 * - a run that ends has no parent, no open wait and no child that has not ended: `planEnd` would
 *   do nothing for it but the transition. The waits and children are read as they were when the
 *   statement began: only the run's owner opens a wait or starts a child (fenced by the epoch
 *   this request holds), and it does not do so while it ends the run.
 *
 * The run's row is re-read when the statement waits for its lock (READ COMMITTED): the fence,
 * the state and the guards are checked again on the row as it is then, against what committed
 * before the statement began, so a transition, a claim or a takeover that committed meanwhile
 * leaves the request unwritten. The
 * steps that ride with the moved runs' transitions are written with them under the same epoch
 * ($3, `batchStepParams`), and their wake-ups sent on $2 when the statement commits. The blobs
 * ($4–$6) are written when some run moved, as the step batch writes them when some run passed its
 * fence: content-addressed, a blob of a run not moved is one its next write would store anyway. The moved runs come back as they are now; a request whose run does not come back wrote
 * nothing, and goes through the planners in a transaction of its own, which gives it the outcome
 * (or the error) it would have had alone.
 */
export function moveRuns(s: string): Sql {
  const columns = MOVE_COLUMNS.map(([name, type]) => `${name} ${type}`).join(", ");
  const returned = RUN_COLUMNS.map((c) => `r.${c}`).join(", ");
  const transitionValues = TRANSITION_VALUE_COLUMNS.map((c) =>
    c === "run_id" ? "m.id" : c === "id" ? "m.last_transition_id" : c === "versions" ? "x.versions::json" : `x.${c}`,
  );
  return sql(
    `WITH x AS MATERIALIZED (
       SELECT * FROM json_to_recordset($1::json) AS x (${columns})
     ), busy AS MATERIALIZED (
       SELECT w.run_id AS id FROM ${s}.waits AS w
       WHERE w.run_id IN (SELECT run_id FROM x WHERE ends) AND w.status = 'open'
       UNION
       SELECT c.parent_run_id FROM ${s}.runs AS c
       WHERE c.parent_run_id IS NOT NULL AND c.parent_run_id IN (SELECT run_id FROM x WHERE ends) AND c.state NOT IN (${ENDED_LIST})
     ), go AS MATERIALIZED (
       SELECT r.id, r.last_transition_id AS seen
       FROM x JOIN ${s}.runs AS r ON r.id = x.run_id
       WHERE r.epoch = x.epoch AND r.state = x.from_state
         AND r.last_transition_id = (SELECT max(t.id) FROM ${s}.transitions AS t WHERE t.run_id = x.run_id)
         AND NOT (x.ends AND (r.parent_run_id IS NOT NULL OR x.run_id IN (SELECT id FROM busy)))
       ORDER BY r.id
       FOR UPDATE OF r
     ), moved AS (
       UPDATE ${s}.runs AS r SET
         state = x.to_state,
         paused_reason = x.paused_reason,
         last_transition_id = r.last_transition_id + 1,
         updated_at = x.at,
         output = CASE WHEN x.set_output THEN x.output::json ELSE r.output END,
         error = CASE WHEN x.set_error THEN x.error::json ELSE r.error END,
         usage = CASE WHEN x.set_usage THEN x.usage::json ELSE r.usage END,
         recoveries = CASE WHEN x.reset_recoveries THEN 0 ELSE r.recoveries END + x.count_recovery::integer,
         stop_request = CASE WHEN x.clear_stop THEN NULL ELSE r.stop_request END,
         lease_owner = CASE WHEN x.release_lease THEN NULL ELSE r.lease_owner END,
         lease_expires_at = CASE WHEN x.release_lease THEN NULL ELSE r.lease_expires_at END
       FROM go JOIN x ON x.run_id = go.id
       WHERE r.id = go.id AND r.epoch = x.epoch AND r.state = x.from_state AND r.last_transition_id = go.seen
       RETURNING ${returned}
     ), new_transitions AS (
       INSERT INTO ${s}.transitions (${TRANSITION_VALUE_COLUMNS.join(", ")}, feed_key)
       SELECT ${transitionValues.join(", ")}, ${feedKey(s, "m.id")}
       FROM moved AS m JOIN x ON x.run_id = m.id
     ), new_blobs AS (
       INSERT INTO ${s}.blobs (digest, text, bytes)
       SELECT b.digest, b.text, b.bytes
       FROM unnest($4::text[], $5::text[], $6::bigint[]) AS b (digest, text, bytes)
       WHERE EXISTS (SELECT 1 FROM moved)
       ON CONFLICT (digest) DO UPDATE SET bytes = EXCLUDED.bytes
     ), new_entries AS (
       INSERT INTO ${s}.journal (run_id, epoch, steps)
       SELECT m.id, m.epoch, e.steps
       FROM json_to_recordset($3::json) AS e (run_id text, steps json) JOIN moved AS m ON m.id = e.run_id
     ), woken AS (
       SELECT count(pg_notify($2, x.wake)) AS sent FROM moved AS m JOIN x ON x.run_id = m.id WHERE x.wake IS NOT NULL
     )
     SELECT m.* FROM moved AS m, woken`,
  );
}
