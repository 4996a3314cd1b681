import { describe, expect, it } from "vitest";
import { ApprovalRefusedError, WaitClosedError, WaitNotFoundError } from "../../core/errors.ts";
import type { RunRecord, WaitRecord } from "../../core/records.ts";
import type { ResolveWaitRequest } from "../backend.ts";
import {
  LEASE_MS,
  pausedRun,
  refusal,
  runningRun,
  storedState,
  suspendRequest,
  T0,
  USER,
  type UseBackend,
  VERSIONS,
  waitRecord,
} from "./conformance-fixtures.ts";

/** A `resolveWait` request that answers `waitId` with `value`. */
function answer(runId: string, waitId: string, value: string, extra: Partial<ResolveWaitRequest> = {}) {
  return {
    runId,
    waitId,
    decide: () => ({ outcome: "answered" as const, value, by: USER }),
    actor: USER,
    reason: `answered by ${USER.id}`,
    versions: VERSIONS,
    at: T0 + 300,
    ...extra,
  } satisfies ResolveWaitRequest;
}

/**
 * resolveWait, fireDueWaits and nextDueAt: waits resolved from outside or when they come due (the
 * waits role, with `waits-conformance.ts`).
 */
export function describeWaitResolution(use: UseBackend): void {
  describeResolveWait(use);
  describeFireDueWaits(use);
  describeNextDueAt(use);
}

/** `resolveWait`. */
function describeResolveWait(use: UseBackend): void {
  describe("resolveWait", () => {
    resolveWaitResolves(use);
    resolveWaitRefuses(use);
  });
}

/** `resolveWait`: the wait resolved, and its PAUSED run resumed. */
function resolveWaitResolves(use: UseBackend): void {
  it("resolves an open wait and moves its PAUSED run to RESUMING with the actor and reason given", async () => {
    const b = use();
    const question = { question: "Which region?", schema: { enum: ["eu", "us"] } };
    const { run, waits } = await pausedRun(b, [{ seq: 1, kind: "user", name: "Which region?", details: question }], {
      pausedReason: "awaiting_user",
    });
    const seen: [WaitRecord, RunRecord][] = [];
    const result = await b.resolveWait(
      answer(run.id, "w1", "eu", {
        decide: (wait, current) => {
          seen.push([wait, current]);
          return { outcome: "answered", value: "eu", by: USER };
        },
      }),
    );
    expect(seen).toHaveLength(1);
    expect(seen[0]?.[0]).toStrictEqual(waits[0]);
    expect(seen[0]?.[1]).toMatchObject({ id: run.id, state: "PAUSED" });
    const resolved = {
      ...waits[0],
      status: "resolved",
      resolution: { outcome: "answered", value: "eu", by: USER, at: T0 + 300 },
    };
    expect(result.wait).toStrictEqual(resolved);
    expect(result.run).toMatchObject({ state: "RESUMING", pausedReason: null, lastTransitionId: 4 });
    expect(result.transition).toStrictEqual({
      runId: run.id,
      id: 4,
      at: T0 + 300,
      actor: USER,
      from: "PAUSED",
      to: "RESUMING",
      pausedReason: null,
      reason: "answered by alice",
      versions: VERSIONS,
    });
    expect(await b.loadWaits(run.id)).toStrictEqual([resolved]);
    expect(await b.getRun(run.id)).toStrictEqual(result.run);
    expect((await b.listTransitions(run.id)).at(-1)).toStrictEqual(result.transition);
    const claimed = await b.claimRun({ workerId: "w2", now: T0 + 400, leaseMs: LEASE_MS });
    expect(claimed).toMatchObject({ id: run.id, state: "RESUMING", epoch: run.epoch + 1 });
  });

  it("resolves the wait of a run that is not paused without a transition", async () => {
    const b = use();
    const run = await runningRun(b);
    const waits = [waitRecord(run.id, 1, { kind: "timer", name: "sleep", dueAt: T0 }), waitRecord(run.id, 2)];
    expect((await b.suspend(suspendRequest(run, waits))).paused).toBe(false);
    const result = await b.resolveWait(answer(run.id, "w2", "later"));
    expect(result.transition).toBeUndefined();
    expect(result.run).toMatchObject({ state: "RUNNING", lastTransitionId: 2, leaseOwner: "w1" });
    expect((await b.loadWaits(run.id))[1]?.status).toBe("resolved");
  });
}

/** `resolveWait`: refusals, suspended orphans, concurrent resolutions. */
function resolveWaitRefuses(use: UseBackend): void {
  it("writes nothing when decide refuses", async () => {
    const b = use();
    const { run } = await pausedRun(b, [{ seq: 1, kind: "approval", name: "refund", dueAt: T0 + 9_000 }], {
      pausedReason: "awaiting_approval",
    });
    const before = await storedState(b, run.id);
    const refused = new ApprovalRefusedError("bob is not an approver of refund", "not_an_approver");
    const error = await refusal(
      b.resolveWait(
        answer(run.id, "w1", "x", {
          decide: () => {
            throw refused;
          },
        }),
      ),
    );
    expect(error).toBe(refused);
    expect(await storedState(b, run.id)).toStrictEqual(before);
    expect(before.run?.state).toBe("PAUSED");
    expect(before.waits[0]?.status).toBe("open");
  });

  it("refuses an unknown wait or run with WaitNotFoundError and a second resolution with WaitClosedError", async () => {
    const b = use();
    const { run } = await pausedRun(b, [{ seq: 1, kind: "user", name: "Which region?" }], {
      pausedReason: "awaiting_user",
    });
    let calls = 0;
    const decide = () => {
      calls += 1;
      return { outcome: "answered" as const, value: "us" };
    };
    expect(await refusal(b.resolveWait(answer(run.id, "w9", "eu", { decide })))).toBeInstanceOf(WaitNotFoundError);
    expect(await refusal(b.resolveWait(answer("ghost", "w1", "eu", { decide })))).toBeInstanceOf(WaitNotFoundError);
    expect(calls).toBe(0);
    const first = await b.resolveWait(answer(run.id, "w1", "eu"));
    const after = await storedState(b, run.id);
    const second = await refusal(b.resolveWait(answer(run.id, "w1", "us", { decide, at: T0 + 400 })));
    expect(second).toBeInstanceOf(WaitClosedError);
    expect(calls).toBe(0);
    expect(await storedState(b, run.id)).toStrictEqual(after);
    expect(after.waits[0]).toStrictEqual(first.wait);
  });

  it("does not resume a suspended orphan", async () => {
    const b = use();
    const { run } = await pausedRun(b, [{ seq: 1 }], { pausedReason: "suspended_orphan" });
    const result = await b.resolveWait(answer(run.id, "w1", "eu"));
    expect(result.transition).toBeUndefined();
    expect(result.wait.status).toBe("resolved");
    expect(await b.getRun(run.id)).toMatchObject({ state: "PAUSED", pausedReason: "suspended_orphan" });
    expect(await b.listTransitions(run.id)).toHaveLength(3);
  });

  it("lets exactly one of two concurrent resolutions of one wait win", async () => {
    const b = use();
    const { run } = await pausedRun(b, [{ seq: 1, kind: "user", name: "Which region?" }], {
      pausedReason: "awaiting_user",
    });
    const results = await Promise.allSettled([
      b.resolveWait(answer(run.id, "w1", "eu", { actor: { kind: "user", id: "a" } })),
      b.resolveWait(answer(run.id, "w1", "us", { actor: { kind: "user", id: "b" } })),
    ]);
    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.filter((r) => r.status === "rejected");
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(WaitClosedError);
    const winner = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof b.resolveWait>>>).value;
    expect((await b.loadWaits(run.id))[0]).toStrictEqual(winner.wait);
    const transitions = await b.listTransitions(run.id);
    expect(transitions.map((t) => t.to)).toEqual(["PENDING", "RUNNING", "PAUSED", "RESUMING"]);
    expect(transitions[3]?.actor).toEqual(winner.transition?.actor);
  });
}

/** `fireDueWaits`. */
function describeFireDueWaits(use: UseBackend): void {
  describe("fireDueWaits", () => {
    it("fires only waits that are due, with the outcome of their kind, and resumes their PAUSED runs", async () => {
      const b = use();
      const due = T0 + 1_000;
      const kinds = [
        ["timer", "fired"],
        ["retry", "fired"],
        ["approval", "expired"],
        ["signal", "timed_out"],
        ["user", "timed_out"],
      ] as const;
      const paused: { run: RunRecord; waits: WaitRecord[] }[] = [];
      for (const [kind] of kinds) paused.push(await pausedRun(b, [{ seq: 1, kind, name: kind, dueAt: due }]));
      const notYet = await pausedRun(b, [{ seq: 1, kind: "timer", name: "sleep", dueAt: due + 1 }]);

      const fired = await b.fireDueWaits(due, 100);
      expect(fired).toHaveLength(kinds.length);
      for (const [i, [, outcome]] of kinds.entries()) {
        const { run, waits } = paused[i] as { run: RunRecord; waits: WaitRecord[] };
        const resolved: WaitRecord = {
          ...(waits[0] as WaitRecord),
          status: "resolved",
          resolution: { outcome, at: due },
        };
        expect(fired.find((w) => w.runId === run.id)).toStrictEqual(resolved);
        expect(await b.loadWaits(run.id)).toStrictEqual([resolved]);
        const stored = await b.getRun(run.id);
        expect(stored).toMatchObject({ state: "RESUMING", lastTransitionId: 4, updatedAt: due });
        const last = (await b.listTransitions(run.id)).at(-1);
        expect(last).toMatchObject({ id: 4, from: "PAUSED", to: "RESUMING", at: due, actor: { kind: "system" } });
        expect(last?.versions).toEqual(VERSIONS);
      }
      expect(await b.getRun(notYet.run.id)).toMatchObject({ state: "PAUSED", lastTransitionId: 3 });
      expect((await b.loadWaits(notYet.run.id))[0]?.status).toBe("open");
      // A resolved wait does not fire again.
      expect(await b.fireDueWaits(due, 100)).toEqual([]);
      expect((await b.fireDueWaits(due + 1, 100)).map((w) => w.runId)).toEqual([notYet.run.id]);
    });

    it("fires at most limit waits, and resumes a run once for several", async () => {
      const b = use();
      const { run } = await pausedRun(
        b,
        [1, 2, 3].map((seq) => ({ seq, kind: "timer" as const, name: "sleep", dueAt: T0 + 1_000 + seq })),
      );
      expect(await b.fireDueWaits(T0 + 5_000, 2)).toHaveLength(2);
      expect((await b.loadWaits(run.id)).filter((w) => w.status === "open")).toHaveLength(1);
      expect(await b.fireDueWaits(T0 + 5_000, 2)).toHaveLength(1);
      expect((await b.loadWaits(run.id)).every((w) => w.status === "resolved")).toBe(true);
      expect((await b.listTransitions(run.id)).map((t) => t.to)).toEqual(["PENDING", "RUNNING", "PAUSED", "RESUMING"]);
    });

    it("does not fire a wait resolved before its due time", async () => {
      const b = use();
      const { run } = await pausedRun(b, [{ seq: 1, kind: "approval", name: "refund", dueAt: T0 + 1_000 }], {
        pausedReason: "awaiting_approval",
      });
      const { wait } = await b.resolveWait({
        runId: run.id,
        waitId: "w1",
        decide: () => ({ outcome: "approved", by: USER }),
        actor: USER,
        reason: "approved",
        versions: VERSIONS,
        at: T0 + 500,
      });
      expect(await b.fireDueWaits(T0 + 2_000, 100)).toEqual([]);
      expect(await b.loadWaits(run.id)).toStrictEqual([wait]);
    });
  });
}

/** `nextDueAt`. */
function describeNextDueAt(use: UseBackend): void {
  describe("nextDueAt", () => {
    it("is the earliest due time among open waits, null when there is none", async () => {
      const b = use();
      expect(await b.nextDueAt()).toBeNull();
      const { run } = await pausedRun(b, [{ seq: 1 }]);
      expect(await b.nextDueAt()).toBeNull();
      await pausedRun(b, [{ seq: 1, kind: "timer", name: "sleep", dueAt: T0 + 3_000 }]);
      await pausedRun(b, [
        { seq: 1, kind: "timer", name: "sleep", dueAt: T0 + 2_000 },
        { seq: 2, dueAt: T0 + 4_000 },
      ]);
      expect(await b.nextDueAt()).toBe(T0 + 2_000);
      await b.fireDueWaits(T0 + 2_000, 100);
      expect(await b.nextDueAt()).toBe(T0 + 3_000);
      await b.fireDueWaits(T0 + 3_000, 100);
      expect(await b.nextDueAt()).toBe(T0 + 4_000);
      await b.fireDueWaits(T0 + 4_000, 100);
      expect(await b.nextDueAt()).toBeNull();
      expect((await b.loadWaits(run.id))[0]?.status).toBe("open");
    });
  });
}
