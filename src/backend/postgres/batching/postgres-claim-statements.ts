import { RUN_COLUMNS } from "../../rows/run-rows.ts";
import { TRANSITION_VALUE_COLUMNS } from "../../rows/transition-rows.ts";
import { CLAIM_ORDER, claimable, holding, keyHasSlot } from "../postgres-lease-statements.ts";
import { feedKey, type Sql, sql } from "../postgres-sql.ts";

/**
 * A worker's batch claim of `PostgresBackend` (DESIGN §7), which leases its runs and moves the
 * PENDING ones to RUNNING in the same statement (the claim of one run, `claimNext`, is in
 * `postgres-lease-statements.ts`).
 */

/**
 * The end of a batch claim, after a CTE `picked` (id, state, agent, last_transition_id, key) of
 * runs locked by this statement: those with `go` in `admit` are leased to $4 until $5 (a new
 * epoch each), and the PENDING ones moved to RUNNING with their transition
 * (`ClaimManyRequest.start`) — the arithmetic of `applyTransition` for that move, which needs
 * nothing but the row: state RUNNING, no paused reason, the next transition id, `updated_at` the
 * claim's time; the transition at $1 by the actor $7/$8 with the reason $9 and the versions of
 * the run's agent in $6 (a JSON object keyed by agent; NULL starts none).
 *
 * A PENDING run is started only when the statement sees its last transition: a transition that
 * committed after the statement began (the row is read as it is once locked, the transitions as
 * they were when the statement began) would be missing from the new transition's feed key
 * ({@link feedKey}). Such a run, rare, comes back leased and not started, and its worker records
 * RUNNING in a transaction of its own, as it does for a run of an agent missing from $6.
 */
function claimTail(s: string, admit: string): string {
  const returned = RUN_COLUMNS.map((c) => `r.${c}`).join(", ");
  return `go AS MATERIALIZED (
       SELECT p.id, coalesce(p.state = 'PENDING' AND ($6::json -> p.agent) IS NOT NULL
         AND p.last_transition_id = (SELECT max(t.id) FROM ${s}.transitions AS t WHERE t.run_id = p.id), false) AS start
       FROM picked AS p WHERE ${admit}
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
     )`;
}

/**
 * A worker's claim, one statement and one commit: up to $3 of the runnable runs first in claim
 * order (effective priority, then age) that no other transaction is locking (SKIP LOCKED), with
 * the keyed runs whose key looks full left out. The runs without a concurrency key are claimed
 * ({@link claimTail}) and come back with `deferred` false; the keyed ones picked come back
 * unclaimed with `deferred` true, for {@link claimKeyed} to claim under their keys' locks. With no
 * keyed run about, this is the claim of old plus one column test.
 */
export function claimRuns(s: string): Sql {
  const runColumns = RUN_COLUMNS.map((c) => `r.${c}`).join(", ");
  return sql(
    `WITH picked AS (
       SELECT id, state, agent, last_transition_id, concurrency_key FROM ${s}.runs AS c
       WHERE ${claimable("c")} AND ${keyHasSlot(s, "c")}
       ORDER BY ${CLAIM_ORDER}, id
       LIMIT $3
       FOR UPDATE SKIP LOCKED
     ), ${claimTail(s, "p.concurrency_key IS NULL")}
     SELECT *, false AS deferred FROM claimed
     UNION ALL
     SELECT ${runColumns}, false, true FROM picked AS p JOIN ${s}.runs AS r ON r.id = p.id
     WHERE p.concurrency_key IS NOT NULL`,
  );
}

/**
 * The claim of runs with the concurrency keys $10 (those {@link claimRuns} deferred), in a
 * transaction that holds the advisory locks of the keys (`lockKeys`, an earlier statement, so
 * that this statement's snapshot sees every claim of those keys that committed). Per key, its
 * claimable runs are ranked in claim order (index runs_by_concurrency_key, at most $3 each) and
 * the first ones are admitted while the slots held (`holding`) plus the rank stay within the
 * run's limit: a run is never claimed before a better one of its key, whichever claimer saw
 * which. An admitted run another transaction is locking is skipped (claimed by that one, or on
 * the next claim). $1–$9 as in {@link claimRuns}.
 */
export function claimKeyed(s: string): Sql {
  return sql(
    `WITH keys AS (
       SELECT DISTINCT k AS concurrency_key FROM unnest($10::text[]) AS k
     ), held AS (
       SELECT h.concurrency_key, count(*) AS n FROM ${s}.runs AS h
       WHERE h.concurrency_key IN (SELECT concurrency_key FROM keys) AND ${holding("h", "$1")}
       GROUP BY h.concurrency_key
     ), ranked AS (
       SELECT x.* FROM keys CROSS JOIN LATERAL (
         SELECT c.id, c.concurrency_key, c.concurrency_limit, row_number() OVER (ORDER BY ${CLAIM_ORDER}, c.id) AS rn
         FROM ${s}.runs AS c
         WHERE c.concurrency_key = keys.concurrency_key AND ${claimable("c")}
         ORDER BY ${CLAIM_ORDER}, c.id
         LIMIT $3
       ) AS x
     ), picked AS (
       SELECT c.id, c.state, c.agent, c.last_transition_id, c.concurrency_key FROM ${s}.runs AS c
       WHERE c.id IN (SELECT x.id FROM ranked AS x LEFT JOIN held USING (concurrency_key)
                      WHERE x.rn + coalesce(held.n, 0) <= x.concurrency_limit)
         AND ${claimable("c")}
       FOR UPDATE SKIP LOCKED
     ), ${claimTail(s, "true")}
     SELECT * FROM claimed`,
  );
}
