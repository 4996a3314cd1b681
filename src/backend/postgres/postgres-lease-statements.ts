import { OWNED_STATES } from "../../core/run-state.ts";
import { RUN_COLUMNS as RUN_COLUMN_LIST } from "../rows/run-rows.ts";
import { RUNNABLE_STATES } from "../rules/lease-rules.ts";
import { type Sql, sql, stateList } from "./postgres-sql.ts";

/** The SQL of the leases of `PostgresBackend`: claims, renewals, lapsed leases, recoverable runs. */

const OWNED_LIST = stateList(OWNED_STATES);
const RUN_COLUMNS = RUN_COLUMN_LIST.join(", ");

/**
 * The runnable runs at $1 of the agents $2 (NULL: any): exactly what `isClaimable` accepts. The
 * states are the same list, in the same order, as the `runs_runnable` index predicate.
 */
export const CLAIMABLE = `state IN (${stateList(RUNNABLE_STATES)})
         AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= $1)
         AND ($2::text[] IS NULL OR agent = ANY ($2::text[]))`;

/**
 * The oldest runnable run ({@link CLAIMABLE}), locked. SKIP LOCKED: a run another worker is
 * claiming right now is passed over, not waited for. The rule is still checked on the row found.
 */
export function claimNext(s: string): Sql {
  return sql(
    `SELECT ${RUN_COLUMNS} FROM ${s}.runs
       WHERE ${CLAIMABLE}
       ORDER BY created_at, id
       LIMIT 1
       FOR UPDATE SKIP LOCKED`,
  );
}

/** The statements of the leases role (the batch claim, `claimRuns`, is in `batching/`). */
export interface LeaseStatements {
  /** {@link claimNext}. */
  claimNext: Sql;
  setLease: Sql;
  renewLeases: Sql;
  listExpired: Sql;
  listRecoverable: Sql;
}

/** The statements of {@link LeaseStatements} for the quoted schema `s`. */
export function leaseStatements(s: string): LeaseStatements {
  return {
    claimNext: claimNext(s),
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
