import type Database from "better-sqlite3";
import type { RunRecord } from "../../core/records.ts";
import type { ClaimRequest, RenewRequest } from "../contract/lease-store.ts";
import { rowToRun } from "../rows/run-rows.ts";
import { claimed, isClaimable } from "../rules/lease-rules.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";
import type { Statements } from "./sqlite-statements.ts";

type Tx<F extends (...args: never[]) => unknown> = Database.Transaction<F>;

/** The leases of `SqliteBackend` (`LeaseStore`): claims, renewals, lapsed leases, recoverable runs. */
export class SqliteLeases {
  readonly #c: SqliteConnection;
  readonly #s: Statements;
  readonly #claim: Tx<(request: ClaimRequest) => RunRecord | undefined>;
  readonly #renew: Tx<(request: RenewRequest) => string[]>;

  constructor(connection: SqliteConnection, s: Statements) {
    this.#c = connection;
    this.#s = s;
    this.#claim = connection.db.transaction((request: ClaimRequest): RunRecord | undefined => {
      const agents = request.agents === undefined ? null : JSON.stringify(request.agents);
      const row =
        request.runId === undefined
          ? s.claimNext.get(request.now, agents, agents, request.now)
          : s.getRun.get(request.runId);
      if (!row) return undefined;
      const run = rowToRun(row);
      if (!isClaimable(run, request.now, request.agents, request.runId === undefined ? undefined : request.takeover)) {
        return undefined;
      }
      if (run.concurrencyKey !== undefined && request.runId !== undefined) {
        const held = s.keyHolders.get(run.concurrencyKey, run.id, request.now)?.n ?? 0;
        if (held >= (run.concurrencyLimit ?? 1)) return undefined;
      }
      const next = claimed(run, request.workerId, request.now, request.leaseMs);
      s.setLease.run(next.epoch, next.leaseOwner, next.leaseExpiresAt, next.updatedAt, next.id);
      return next;
    });
    this.#renew = connection.db.transaction((request: RenewRequest): string[] => {
      const lost: string[] = [];
      const expiresAt = request.now + request.leaseMs;
      for (const { runId, epoch } of request.runs) {
        if (s.renewLease.run(expiresAt, runId, epoch, request.workerId).changes === 0) lost.push(runId);
      }
      return lost;
    });
  }

  claimRun(request: ClaimRequest): RunRecord | undefined {
    // Not fsynced: a worker follows every claim with a synchronous transition (RUNNING, or the
    // end of a cancellation), whose fsync covers the claim (WAL order). A power loss before it
    // loses a claim whose workers died with the machine: the run is simply claimable again.
    return this.#c.write(false, "claimRun", () => this.#claim.immediate(request));
  }

  renewLeases(request: RenewRequest): string[] {
    // NORMAL is enough: a renewal lost to a machine crash only matters to the worker that made
    // it, and that worker died with the machine.
    return this.#c.write(false, "renewLeases", () => this.#renew.immediate(request));
  }

  listExpiredLeases(now: number, limit: number): RunRecord[] {
    return this.#c.read("listExpiredLeases", () => this.#s.listExpired.all(now, limit).map(rowToRun));
  }

  listRecoverable(maxRecoveries: number, limit: number): RunRecord[] {
    return this.#c.read("listRecoverable", () => this.#s.listRecoverable.all(maxRecoveries, limit).map(rowToRun));
  }
}
