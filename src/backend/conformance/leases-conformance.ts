import { describe, expect, it } from "vitest";
import type { RunRecord } from "../../core/records.ts";
import type { RuntimeBackend } from "../backend.ts";
import { LEASE_MS, move, newRun, runningRun, T0, type UseBackend } from "./conformance-fixtures.ts";

/** Moves a RUNNING run to INTERRUPTED the way recovery does: take it over from a lapsed lease. */
async function interrupt(backend: RuntimeBackend, run: RunRecord, countRecovery = false): Promise<RunRecord> {
  const { run: interrupted } = await backend.transition(
    move(run, "RUNNING", "INTERRUPTED", {
      fence: { takeover: { epoch: run.epoch, leaseExpiresAt: run.leaseExpiresAt } },
      patch: { countRecovery },
    }),
  );
  return interrupted;
}

/** claimRun, renewLeases and the lease queries of recovery. */
export function describeLeases(use: UseBackend): void {
  describeClaimRun(use);
  describeRenewLeases(use);
  describeListExpiredLeases(use);
  describeListRecoverable(use);
}

/** `claimRun`. */
function describeClaimRun(use: UseBackend): void {
  describe("claimRun", () => {
    claimRunTakes(use);
    claimRunLeases(use);
  });
}

/** `claimRun`: what it takes, for whom, and never twice. */
function claimRunTakes(use: UseBackend): void {
  it("claims a PENDING run: sets the lease and increments the epoch", async () => {
    const run = await newRun(use());
    const claimed = await use().claimRun({ workerId: "w1", now: T0 + 5, leaseMs: LEASE_MS });
    const expected = { ...run, epoch: 1, leaseOwner: "w1", leaseExpiresAt: T0 + 5 + LEASE_MS, updatedAt: T0 + 5 };
    expect(claimed).toStrictEqual(expected);
    expect(await use().getRun(run.id)).toStrictEqual(expected);
    expect(await use().listTransitions(run.id)).toHaveLength(1);
  });

  it("claims only runs of the agents the worker names", async () => {
    const other = await newRun(use(), { agent: "other_agent", at: T0 });
    const mine = await newRun(use(), { agent: "report_builder", at: T0 + 1 });
    const request = { workerId: "w1", now: T0 + 5, leaseMs: LEASE_MS, agents: ["report_builder"] };
    expect((await use().claimRun(request))?.id).toBe(mine.id);
    expect(await use().claimRun(request)).toBeUndefined();
    expect(await use().claimRun({ ...request, runId: other.id })).toBeUndefined();
    expect(await use().claimRun({ ...request, agents: [] })).toBeUndefined();
    expect((await use().getRun(other.id))?.leaseOwner).toBeNull();
    expect((await use().claimRun({ ...request, agents: ["x", "other_agent"] }))?.id).toBe(other.id);
  });

  it("returns undefined when nothing is claimable", async () => {
    expect(await use().claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS })).toBeUndefined();
  });

  it("never gives one run to two concurrent claims", async () => {
    const run = await newRun(use());
    const results = await Promise.all(
      ["w1", "w2", "w3"].map((workerId) => use().claimRun({ workerId, now: T0, leaseMs: LEASE_MS })),
    );
    const winners = results.filter((r) => r !== undefined);
    expect(winners).toHaveLength(1);
    expect(winners[0]?.id).toBe(run.id);
    expect((await use().getRun(run.id))?.leaseOwner).toBe(winners[0]?.leaseOwner);
    expect((await use().getRun(run.id))?.epoch).toBe(1);
  });
}

/** `claimRun`: live leases, a named run, the runnable states. */
function claimRunLeases(use: UseBackend): void {
  it("hands out each of several runs exactly once", async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) ids.add((await newRun(use(), { at: T0 + i })).id);
    const claims = await Promise.all(
      Array.from({ length: 7 }, (_, i) => use().claimRun({ workerId: `w${i}`, now: T0 + 10, leaseMs: LEASE_MS })),
    );
    const got = claims.filter((r) => r !== undefined).map((r) => r.id);
    expect(got).toHaveLength(5);
    expect(new Set(got)).toEqual(ids);
  });

  it("does not claim a run under a live lease, and claims it once the lease lapses", async () => {
    const run = await newRun(use());
    const first = await use().claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS });
    expect(first?.epoch).toBe(1);
    const live = await use().claimRun({ workerId: "w2", now: T0 + LEASE_MS - 1, leaseMs: LEASE_MS });
    expect(live).toBeUndefined();
    expect(await use().claimRun({ workerId: "w2", now: T0 + 1, leaseMs: LEASE_MS, runId: run.id })).toBeUndefined();
    const second = await use().claimRun({ workerId: "w2", now: T0 + LEASE_MS, leaseMs: LEASE_MS });
    expect(second).toMatchObject({ id: run.id, epoch: 2, leaseOwner: "w2", leaseExpiresAt: T0 + 2 * LEASE_MS });
  });

  it("with runId, considers only that run", async () => {
    const a = await newRun(use(), { at: T0 });
    const b = await newRun(use(), { at: T0 + 1 });
    const got = await use().claimRun({ workerId: "w1", now: T0 + 2, leaseMs: LEASE_MS, runId: b.id });
    expect(got?.id).toBe(b.id);
    // b is leased now; a is claimable but not asked for.
    expect(await use().claimRun({ workerId: "w2", now: T0 + 2, leaseMs: LEASE_MS, runId: b.id })).toBeUndefined();
    expect(await use().claimRun({ workerId: "w2", now: T0 + 2, leaseMs: LEASE_MS, runId: "nope" })).toBeUndefined();
    expect((await use().getRun(a.id))?.epoch).toBe(0);
  });

  it("claims only PENDING and RESUMING runs", async () => {
    const b = use();
    const cancelled = await newRun(b);
    await b.transition(move(cancelled, "PENDING", "CANCELLED", { fence: { unowned: true, now: T0 } }));
    const paused = await runningRun(b);
    await b.transition(
      move(paused, "RUNNING", "PAUSED", { pausedReason: "awaiting_signal", patch: { releaseLease: true } }),
    );
    const lapsed = await runningRun(b);
    const interrupted = await interrupt(b, await runningRun(b));
    const later = T0 + 10 * LEASE_MS;
    for (const run of [cancelled, paused, lapsed, interrupted]) {
      expect(await b.claimRun({ workerId: "w9", now: later, leaseMs: LEASE_MS, runId: run.id })).toBeUndefined();
    }
    expect(await b.claimRun({ workerId: "w9", now: later, leaseMs: LEASE_MS })).toBeUndefined();

    const resumed = await b.transition(
      move(paused, "PAUSED", "RESUMING", { fence: { unowned: true, now: later }, at: later }),
    );
    const got = await b.claimRun({ workerId: "w9", now: later, leaseMs: LEASE_MS });
    expect(got).toMatchObject({ id: paused.id, state: "RESUMING", epoch: resumed.run.epoch + 1, leaseOwner: "w9" });
  });
}

/** `renewLeases`. */
function describeRenewLeases(use: UseBackend): void {
  describe("renewLeases", () => {
    it("extends the leases the worker still holds", async () => {
      const run = await runningRun(use(), { workerId: "w1" });
      const lost = await use().renewLeases({
        workerId: "w1",
        now: T0 + 20_000,
        leaseMs: LEASE_MS,
        runs: [{ runId: run.id, epoch: run.epoch }],
      });
      expect(lost).toEqual([]);
      const stored = await use().getRun(run.id);
      expect(stored).toMatchObject({ leaseOwner: "w1", leaseExpiresAt: T0 + 20_000 + LEASE_MS, epoch: run.epoch });
    });

    it("returns the runs whose epoch moved on, without touching the new owner's lease", async () => {
      const b = use();
      const kept = await runningRun(b, { workerId: "w1" });
      const pending = await newRun(b);
      const first = (await b.claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS, runId: pending.id })) as RunRecord;
      const second = await b.claimRun({ workerId: "w2", now: T0 + LEASE_MS, leaseMs: LEASE_MS, runId: pending.id });
      expect(second?.epoch).toBe(first.epoch + 1);
      const lost = await b.renewLeases({
        workerId: "w1",
        now: T0 + LEASE_MS + 1,
        leaseMs: LEASE_MS,
        runs: [
          { runId: kept.id, epoch: kept.epoch },
          { runId: pending.id, epoch: first.epoch },
        ],
      });
      expect(lost).toEqual([pending.id]);
      expect(await b.getRun(pending.id)).toMatchObject({ leaseOwner: "w2", leaseExpiresAt: T0 + 2 * LEASE_MS });
      expect((await b.getRun(kept.id))?.leaseExpiresAt).toBe(T0 + 2 * LEASE_MS + 1);
    });

    it("returns runs held by another owner, released runs and unknown runs", async () => {
      const b = use();
      const run = await runningRun(b, { workerId: "w1" });
      const released = await runningRun(b, { workerId: "w2" });
      await b.transition(move(released, "RUNNING", "COMPLETED", { patch: { output: 1, releaseLease: true } }));
      const lost = await b.renewLeases({
        workerId: "w2",
        now: T0 + 1,
        leaseMs: LEASE_MS,
        runs: [
          { runId: run.id, epoch: run.epoch },
          { runId: released.id, epoch: released.epoch },
          { runId: "ghost", epoch: 1 },
        ],
      });
      expect(lost.sort()).toEqual([run.id, released.id, "ghost"].sort());
      expect(await b.getRun(run.id)).toMatchObject({ leaseOwner: "w1", leaseExpiresAt: T0 + LEASE_MS });
    });
  });
}

/** `listExpiredLeases`. */
function describeListExpiredLeases(use: UseBackend): void {
  describe("listExpiredLeases", () => {
    it("lists leased runs (owned states, and PENDING runs claimed) whose lease lapsed at now, soonest first, up to limit", async () => {
      const b = use();
      const r1 = await runningRun(b, { now: T0 });
      const r2 = await runningRun(b, { now: T0 + 1 });
      const live = await runningRun(b, { now: T0 + 5 * LEASE_MS });
      // Claimed and never started (its worker died before recording RUNNING): listed too.
      const pendingClaimed = await newRun(b);
      await b.claimRun({ workerId: "w1", now: T0 + 2, leaseMs: LEASE_MS, runId: pendingClaimed.id });
      await newRun(b);
      const paused = await runningRun(b, { now: T0 });
      await b.transition(
        move(paused, "RUNNING", "PAUSED", { pausedReason: "awaiting_user", patch: { releaseLease: true } }),
      );
      const now = T0 + 2 * LEASE_MS;
      const expired = await b.listExpiredLeases(now, 10);
      expect(expired.map((r) => r.id)).toEqual([r1.id, r2.id, pendingClaimed.id]);
      expect(expired.find((r) => r.id === r1.id)).toStrictEqual(await b.getRun(r1.id));
      expect(expired.find((r) => r.id === pendingClaimed.id)).toStrictEqual(await b.getRun(pendingClaimed.id));
      expect((await b.listExpiredLeases(now, 1)).map((r) => r.id)).toEqual([r1.id]);
      expect(await b.listExpiredLeases(T0 + LEASE_MS - 1, 10)).toEqual([]);
      // A lease ending exactly now has lapsed: the same rule as claiming.
      expect((await b.listExpiredLeases(T0 + LEASE_MS, 10)).map((r) => r.id)).toEqual([r1.id]);
      expect((await b.listExpiredLeases(T0 + 100 * LEASE_MS, 10)).map((r) => r.id)).toContain(live.id);
    });
  });
}

/** `listRecoverable`. */
function describeListRecoverable(use: UseBackend): void {
  describe("listRecoverable", () => {
    it("lists INTERRUPTED runs with fewer recoveries than the maximum, up to limit", async () => {
      const b = use();
      const fresh = await interrupt(b, await runningRun(b));
      const once = await interrupt(b, await runningRun(b), true);
      expect(once.recoveries).toBe(1);
      await runningRun(b);
      expect((await b.listRecoverable(1, 10)).map((r) => r.id)).toEqual([fresh.id]);
      expect((await b.listRecoverable(2, 10)).map((r) => r.id).sort()).toEqual([fresh.id, once.id].sort());
      expect(await b.listRecoverable(0, 10)).toEqual([]);
      expect(await b.listRecoverable(2, 1)).toHaveLength(1);
      expect((await b.listRecoverable(1, 10))[0]).toStrictEqual(await b.getRun(fresh.id));
    });
  });
}
