import { OWNED_STATES } from "../../core/run-state.ts";
import { RUN_COLUMNS as RUN_COLUMN_LIST } from "../rows/run-rows.ts";
import { RUNNABLE_STATES } from "../rules/lease-rules.ts";
import { type Sql, sql, stateList } from "./postgres-sql.ts";

/** The SQL of the leases of `PostgresBackend`: claims, renewals, lapsed leases, recoverable runs. */

const OWNED_LIST = stateList(OWNED_STATES);
const RUN_COLUMNS = RUN_COLUMN_LIST.join(", ");

/**
 * The runnable runs `t` at $1 of the agents $2 (NULL: any): exactly what `isClaimable` accepts.
 * The states are the same list, in the same order, as the `runs_claim_order` index predicate.
 */
export function claimable(t: string): string {
  return `${t}.state IN (${stateList(RUNNABLE_STATES)})
         AND (${t}.lease_owner IS NULL OR ${t}.lease_expires_at IS NULL OR ${t}.lease_expires_at <= $1)
         AND ($2::text[] IS NULL OR ${t}.agent = ANY ($2::text[]))`;
}

/**
 * The claim order (`claimOrder`): creation time less the priority in aging intervals
 * (`PRIORITY_AGING_MS`), the expression of the index `runs_claim_order` (migration 8).
 */
export const CLAIM_ORDER = "(created_at - priority::bigint * 60000)";

/**
 * The runs `t` holding a slot of their concurrency key at `now` (`holdsSlot`): leased, and
 * RUNNING / COMPENSATING or runnable under a live lease. Implies `lease_owner IS NOT NULL`, the
 * predicate of the index `runs_key_holders`.
 */
export function holding(t: string, now: string): string {
  return `${t}.lease_owner IS NOT NULL AND (${t}.state IN ('RUNNING', 'COMPENSATING')
    OR (${t}.state IN (${stateList(RUNNABLE_STATES)}) AND ${t}.lease_expires_at > ${now}))`;
}

/**
 * Run `t` has no key, or its key looks to have a free slot at $1. A hint only (the count is of
 * this statement's snapshot): the claim counts again under the key's lock (`lockKeys`). A run
 * without a key never reaches the count.
 */
export function keyHasSlot(s: string, t: string): string {
  return `(${t}.concurrency_key IS NULL OR ${t}.concurrency_limit > (SELECT count(*) FROM ${s}.runs AS h
           WHERE h.concurrency_key = ${t}.concurrency_key AND ${holding("h", "$1")}))`;
}

/**
 * The first runnable run in claim order ({@link claimable}, {@link CLAIM_ORDER}) whose key looks
 * to have a free slot, locked. SKIP LOCKED: a run another worker is claiming right now is passed
 * over, not waited for. The rules are still checked on the row found.
 */
export function claimNext(s: string): Sql {
  return sql(
    `SELECT ${RUN_COLUMNS} FROM ${s}.runs AS c
       WHERE ${claimable("c")} AND ${keyHasSlot(s, "c")}
       ORDER BY ${CLAIM_ORDER}, id
       LIMIT 1
       FOR UPDATE SKIP LOCKED`,
  );
}

/** The statements of the leases role (the batch claim, `claimRuns`, is in `batching/`). */
export interface LeaseStatements {
  /** {@link claimNext}. */
  claimNext: Sql;
  /**
   * Takes the advisory locks (transaction-scoped) of the concurrency keys $2 in the lock class $1
   * (the schema's), in hash order, so that two claimers of one key count its slots one after the other.
   */
  lockKeys: Sql;
  /** The runs other than $2 that hold a slot of key $1 at $3 ({@link holding}). */
  keyHolders: Sql;
  setLease: Sql;
  renewLeases: Sql;
  listExpired: Sql;
  listRecoverable: Sql;
}

/** The statements of {@link LeaseStatements} for the quoted schema `s`. */
export function leaseStatements(s: string): LeaseStatements {
  return {
    claimNext: claimNext(s),
    lockKeys: sql(
      `SELECT count(pg_advisory_xact_lock($1::integer, k.h))::integer AS n
       FROM (SELECT DISTINCT hashtext(key) AS h FROM unnest($2::text[]) AS key ORDER BY h) AS k`,
    ),
    keyHolders: sql(
      `SELECT count(*)::integer AS n FROM ${s}.runs AS h WHERE h.concurrency_key = $1 AND h.id <> $2 AND ${holding("h", "$3")}`,
    ),
    setLease: sql(
      `UPDATE ${s}.runs SET epoch = $2, lease_owner = $3, lease_expires_at = $4, updated_at = $5 WHERE id = $1`,
    ),
    // One statement for the whole batch. A renewal only matters to the worker that made it, so it
    // commits without waiting for the WAL flush (see the durability option). The rows are locked
    // in id order first (`locked` yields each row, locked, before the update can reach it), the
    // order every statement that locks several runs keeps, so a renewal never deadlocks with the
    // end of a run whose parent or child the same worker holds.
    renewLeases: sql(
      `WITH commit_level AS (SELECT set_config('synchronous_commit', 'off', true)),
       locked AS (SELECT id FROM ${s}.runs WHERE id = ANY ($2::text[]) ORDER BY id FOR NO KEY UPDATE)
       UPDATE ${s}.runs AS r SET lease_expires_at = $1
       FROM unnest($2::text[], $3::integer[]) AS x (id, epoch), commit_level, locked
       WHERE r.id = x.id AND locked.id = x.id AND r.epoch = x.epoch AND r.lease_owner = $4
       RETURNING r.id`,
    ),
    listExpired: sql(
      // Runs in an owned state, and PENDING runs a worker claimed and did not start (migration 6
      // indexes those, so a backlog of PENDING runs is not read).
      `(SELECT ${RUN_COLUMNS} FROM ${s}.runs
        WHERE state IN (${OWNED_LIST}) AND lease_expires_at IS NOT NULL AND lease_expires_at <= $1
        ORDER BY lease_expires_at, id LIMIT $2)
       UNION ALL
       (SELECT ${RUN_COLUMNS} FROM ${s}.runs
        WHERE state = 'PENDING' AND lease_owner IS NOT NULL AND lease_expires_at <= $1
        ORDER BY lease_expires_at, id LIMIT $2)
       ORDER BY lease_expires_at, id
       LIMIT $2`,
    ),
    listRecoverable: sql(
      `SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE state = 'INTERRUPTED' AND recoveries < $1 ORDER BY updated_at, id LIMIT $2`,
    ),
  };
}
