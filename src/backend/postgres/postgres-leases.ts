import type { RunRecord } from "../../core/records.ts";
import type { ClaimedRun, ClaimManyRequest, ClaimRequest, RenewRequest } from "../contract/lease-store.ts";
import { type RunRow, rowToRun } from "../rows/run-rows.ts";
import { claimed, isClaimable } from "../rules/lease-rules.ts";
import type { PostgresShared } from "./postgres-plans.ts";

/** The leases of `PostgresBackend` (`LeaseStore`): claims, renewals, lapsed leases, recoverable runs. */
export class PostgresLeases {
  readonly #x: PostgresShared;

  constructor(shared: PostgresShared) {
    this.#x = shared;
  }

  async claimRun(request: ClaimRequest): Promise<RunRecord | undefined> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    return db.transaction(pool, "claimRun", async (client) => {
      // A named run is waited for when another transaction holds it (it may be claimable once
      // that commits); the next runnable run skips the ones other workers are claiming.
      const [row] =
        request.runId === undefined
          ? await db.query<RunRow>(client, statements.claimNext, [request.now, request.agents ?? null])
          : await db.query<RunRow>(client, statements.lockRun, [request.runId]);
      if (!row) return undefined;
      const run = rowToRun(row);
      if (!isClaimable(run, request.now, request.agents, request.runId === undefined ? undefined : request.takeover)) {
        return undefined;
      }
      const next = claimed(run, request.workerId, request.now, request.leaseMs);
      await db.query(client, statements.setLease, [
        next.id,
        next.epoch,
        next.leaseOwner,
        next.leaseExpiresAt,
        next.updatedAt,
      ]);
      return next;
    });
  }

  /**
   * One statement picks the oldest runnable runs other claimers are not locking, leases them and
   * moves the PENDING ones to RUNNING (with `start`): one round trip, one commit
   * (`batching/postgres-claim-statements.ts`).
   */
  async claimRuns(request: ClaimManyRequest): Promise<ClaimedRun[]> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    if (!(request.limit >= 1)) return [];
    const { start } = request;
    const rows = await db.call("claimRuns", () =>
      db.query<RunRow & { started: boolean }>(pool, statements.claimRuns, [
        request.now,
        request.agents ?? null,
        request.limit,
        request.workerId,
        request.now + request.leaseMs,
        start ? JSON.stringify(start.versions) : null,
        start?.actor.kind ?? null,
        start?.actor.id ?? null,
        start?.reason ?? null,
      ]),
    );
    return rows
      .map(({ started, ...row }): ClaimedRun => {
        const run = rowToRun(row);
        const versions = start && started ? start.versions[run.agent] : undefined;
        if (!start || !versions) return { run };
        return {
          run,
          started: {
            runId: run.id,
            id: run.lastTransitionId,
            at: request.now,
            actor: start.actor,
            from: "PENDING",
            to: "RUNNING",
            pausedReason: null,
            reason: start.reason,
            versions,
          },
        };
      })
      .sort((a, b) => a.run.createdAt - b.run.createdAt || (a.run.id < b.run.id ? -1 : 1));
  }

  async renewLeases(request: RenewRequest): Promise<string[]> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    if (request.runs.length === 0) return [];
    return db.call("renewLeases", async () => {
      const renewed = await db.query<{ id: string }>(pool, statements.renewLeases, [
        request.now + request.leaseMs,
        request.runs.map((r) => r.runId),
        request.runs.map((r) => r.epoch),
        request.workerId,
      ]);
      const kept = new Set(renewed.map((r) => r.id));
      return request.runs.filter((r) => !kept.has(r.runId)).map((r) => r.runId);
    });
  }

  async listExpiredLeases(now: number, limit: number): Promise<RunRecord[]> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    return db.call("listExpiredLeases", async () =>
      (await db.query<RunRow>(pool, statements.listExpired, [now, limit])).map(rowToRun),
    );
  }

  async listRecoverable(maxRecoveries: number, limit: number): Promise<RunRecord[]> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    return db.call("listRecoverable", async () =>
      (await db.query<RunRow>(pool, statements.listRecoverable, [maxRecoveries, limit])).map(rowToRun),
    );
  }
}
