import { RUN_COLUMNS } from "../../rows/run-rows.ts";
import { TRANSITION_VALUE_COLUMNS } from "../../rows/transition-rows.ts";
import { CLAIMABLE } from "../postgres-lease-statements.ts";
import { feedKey, type Sql, sql } from "../postgres-sql.ts";

/**
 * A worker's batch claim of `PostgresBackend` (DESIGN §7), which leases its runs and moves the
 * PENDING ones to RUNNING in the same statement (the claim of one run, `claimNext`, is in
 * `postgres-lease-statements.ts`).
 */

/**
 * A worker's claim, one statement and one commit: up to $3 of the oldest runnable runs that no
 * other transaction is locking (SKIP LOCKED), leased to $4 until $5 (a new epoch each), and the
 * PENDING ones moved to RUNNING with their transition (`ClaimManyRequest.start`) — the arithmetic
 * of `applyTransition` for that move, which needs nothing but the row: state RUNNING, no paused
 * reason, the next transition id, `updated_at` the claim's time; the transition at $1 by the actor
 * $7/$8 with the reason $9 and the versions of the run's agent in $6 (a JSON object keyed by
 * agent; NULL starts none). The runs come back as leased, each with `started` when it was moved.
 *
 * A PENDING run is started only when the statement sees its last transition: a transition that
 * committed after the statement began (the row is read as it is once locked, the transitions as
 * they were when the statement began) would be missing from the new transition's feed key
 * ({@link feedKey}). Such a run, rare, comes back leased and not started, and its worker records
 * RUNNING in a transaction of its own, as it does for a run of an agent missing from $6.
 */
export function claimRuns(s: string): Sql {
  const returned = RUN_COLUMNS.map((c) => `r.${c}`).join(", ");
  return sql(
    `WITH picked AS (
       SELECT id, state, agent, last_transition_id FROM ${s}.runs
       WHERE ${CLAIMABLE}
       ORDER BY created_at, id
       LIMIT $3
       FOR UPDATE SKIP LOCKED
     ), go AS MATERIALIZED (
       SELECT p.id, coalesce(p.state = 'PENDING' AND ($6::json -> p.agent) IS NOT NULL
         AND p.last_transition_id = (SELECT max(t.id) FROM ${s}.transitions AS t WHERE t.run_id = p.id), false) AS start
       FROM picked AS p
     ), claimed AS (
       UPDATE ${s}.runs AS r SET epoch = r.epoch + 1, lease_owner = $4, lease_expires_at = $5, updated_at = $1,
         state = CASE WHEN go.start THEN 'RUNNING' ELSE r.state END,
         paused_reason = CASE WHEN go.start THEN NULL ELSE r.paused_reason END,
         last_transition_id = r.last_transition_id + go.start::integer
       FROM go WHERE r.id = go.id
       RETURNING ${returned}, go.start AS started
     ), started AS (
       INSERT INTO ${s}.transitions (${TRANSITION_VALUE_COLUMNS.join(", ")}, feed_key)
       SELECT x.id, x.last_transition_id, $1, $7, $8, 'PENDING', 'RUNNING', NULL, $9, $6::json -> x.agent,
         ${feedKey(s, "x.id")}
       FROM claimed AS x WHERE x.started
     )
     SELECT * FROM claimed`,
  );
}
