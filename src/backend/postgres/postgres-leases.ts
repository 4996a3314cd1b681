import { createHash } from "node:crypto";
import { claimOrder } from "../../core/flow-control.ts";
import type { RunRecord } from "../../core/records.ts";
import type { ClaimedRun, ClaimManyRequest, ClaimRequest, RenewRequest } from "../contract/lease-store.ts";
import { type RunRow, rowToRun } from "../rows/run-rows.ts";
import { claimed, isClaimable } from "../rules/lease-rules.ts";
import type { PostgresShared } from "./postgres-plans.ts";

/** The leases of `PostgresBackend` (`LeaseStore`): claims, renewals, lapsed leases, recoverable runs. */
export class PostgresLeases {
  readonly #x: PostgresShared;

  /** The advisory lock class of this schema's concurrency keys (`lockKeys`). */
  readonly #lockClass: number;

  constructor(shared: PostgresShared) {
    this.#x = shared;
    this.#lockClass = createHash("sha256").update(`cairn:flow:${shared.schema}`).digest().readInt32BE(0);
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
      if (run.concurrencyKey !== undefined) {
        // Under the key's lock, a statement of its own: its snapshot sees every claim of the key.
        await db.query(client, statements.lockKeys, [this.#lockClass, [run.concurrencyKey]]);
        const [held] = await db.query<{ n: number }>(client, statements.keyHolders, [
          run.concurrencyKey,
          run.id,
          request.now,
        ]);
        if ((held?.n ?? 0) >= (run.concurrencyLimit ?? 1)) return undefined;
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
   * One statement picks the first runnable runs in claim order that other claimers are not
   * locking, leases those without a concurrency key and moves the PENDING ones to RUNNING (with
   * `start`): one round trip, one commit (`batching/postgres-claim-statements.ts`). The keyed runs
   * it picked are claimed next in a transaction that takes their keys' locks first (`#claimKeyed`).
   */
  async claimRuns(request: ClaimManyRequest): Promise<ClaimedRun[]> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    if (!(request.limit >= 1)) return [];
    const params = this.#claimParams(request);
    const rows = await db.call("claimRuns", () =>
      db.query<RunRow & { started: boolean; deferred: boolean }>(pool, statements.claimRuns, params),
    );
    const claimedRows: Array<RunRow & { started: boolean }> = [];
    const deferred: RunRow[] = [];
    for (const { deferred: later, ...row } of rows) (later ? deferred : claimedRows).push(row);
    if (deferred.length > 0) claimedRows.push(...(await this.#claimKeyed(params, deferred)));
    return claimedRows
      .map(({ started, ...row }) => this.#claimedRun(request, rowToRun(row), started))
      .sort((a, b) => claimOrder(a.run) - claimOrder(b.run) || (a.run.id < b.run.id ? -1 : 1));
  }

  /** Claims the keyed runs `rows` under their keys' advisory locks (`claimKeyed`). */
  async #claimKeyed(params: unknown[], rows: readonly RunRow[]): Promise<Array<RunRow & { started: boolean }>> {
    const { db, statements } = this.#x;
    const keys = [...new Set(rows.map((row) => row.concurrency_key as string))];
    return db.transaction(db.ready(), "claimRuns", async (client) => {
      await db.query(client, statements.lockKeys, [this.#lockClass, keys]);
      return db.query<RunRow & { started: boolean }>(client, statements.claimKeyed, [...params, keys]);
    });
  }

  #claimParams(request: ClaimManyRequest): unknown[] {
    const { start } = request;
    return [
      request.now,
      request.agents ?? null,
      request.limit,
      request.workerId,
      request.now + request.leaseMs,
      start ? JSON.stringify(start.versions) : null,
      start?.actor.kind ?? null,
      start?.actor.id ?? null,
      start?.reason ?? null,
    ];
  }

  #claimedRun(request: ClaimManyRequest, run: RunRecord, started: boolean): ClaimedRun {
    const { start } = request;
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
