import { describe, expect, it } from "vitest";
import { LeaseLostError } from "../../core/errors.ts";
import type { RunRecord, WaitRecord } from "../../core/records.ts";
import {
  endRun,
  LEASE_MS,
  newRun,
  pausedRun,
  refusal,
  runningRun,
  signalTo,
  stopOf,
  storedState,
  suspendRequest,
  T0,
  type UseBackend,
  VERSIONS,
  WORKER,
  waitRecord,
} from "./conformance-fixtures.ts";

/** suspend and loadWaits (the waits role, with `wait-resolution-conformance.ts`). */
export function describeWaits(use: UseBackend): void {
  describeSuspend(use);
  describeLoadWaits(use);
}

/** `suspend`. */
function describeSuspend(use: UseBackend): void {
  describe("suspend", () => {
    suspendPauses(use);
    suspendResolvesAtOnce(use);
    suspendKeeps(use);
  });
}

/** `suspend`: pausing, or taking a signal from the inbox instead. */
function suspendPauses(use: UseBackend): void {
  it("stores the new waits and pauses the run: PAUSED with its reason, lease released, next transition id", async () => {
    const b = use();
    const run = await runningRun(b);
    const waits = [
      waitRecord(run.id, 1, { name: "approved", details: { schema: { type: "object" } } }),
      waitRecord(run.id, 2, { kind: "timer", name: "sleep", details: { ms: 60_000 }, dueAt: T0 + 60_100 }),
    ];
    const result = await b.suspend(suspendRequest(run, waits, { reason: "waits for approved" }));
    if (!result.paused) throw new Error("expected the run to be paused");
    expect(result.run).toMatchObject({
      state: "PAUSED",
      pausedReason: "awaiting_signal",
      leaseOwner: null,
      leaseExpiresAt: null,
      epoch: run.epoch,
      lastTransitionId: 3,
      updatedAt: T0 + 100,
    });
    expect(result.transition).toStrictEqual({
      runId: run.id,
      id: 3,
      at: T0 + 100,
      actor: WORKER,
      from: "RUNNING",
      to: "PAUSED",
      pausedReason: "awaiting_signal",
      reason: "waits for approved",
      versions: VERSIONS,
    });
    expect(await b.getRun(run.id)).toStrictEqual(result.run);
    expect((await b.listTransitions(run.id)).at(-1)).toStrictEqual(result.transition);
    expect(await b.loadWaits(run.id)).toStrictEqual(waits);
    expect(await b.claimRun({ workerId: "w2", now: T0 + 200, leaseMs: LEASE_MS })).toBeUndefined();
  });

  it("consumes the oldest matching signal already in the inbox and does not pause", async () => {
    const b = use();
    const run = await runningRun(b);
    const sent = [
      signalTo(run.id, "other", "m-other", { at: T0 + 5 }),
      signalTo(run.id, "approved", "zz-first", { at: T0 + 10, payload: { ok: true } }),
      signalTo(run.id, "approved", "aa-second", { at: T0 + 20, payload: { ok: false } }),
    ];
    for (const s of sent) {
      const delivered = await b.deliverSignal(s);
      expect(delivered).toMatchObject({ duplicate: false, deliveredTo: null, transition: undefined });
      expect(delivered.signal.consumedBy).toBeNull();
    }
    const wait = waitRecord(run.id, 1);
    const result = await b.suspend(suspendRequest(run, [wait], { at: T0 + 150 }));
    const resolved: WaitRecord = {
      ...wait,
      status: "resolved",
      resolution: { outcome: "signalled", value: { ok: true }, messageId: "zz-first", at: T0 + 150 },
    };
    expect(result).toStrictEqual({ paused: false, resolved: [resolved], stopRequest: undefined });
    expect(await b.loadWaits(run.id)).toStrictEqual([resolved]);
    expect((await b.listSignals(run.id)).map((s) => [s.messageId, s.consumedBy])).toEqual([
      ["m-other", null],
      ["zz-first", "w1"],
      ["aa-second", null],
    ]);
    // Not paused: still RUNNING under the same lease, no transition written.
    expect(await b.getRun(run.id)).toMatchObject({ state: "RUNNING", leaseOwner: "w1", lastTransitionId: 2 });
  });
}

/** `suspend`: due waits and ended children resolved at once. */
function suspendResolvesAtOnce(use: UseBackend): void {
  it("fires a wait whose due time has passed and keeps the others open", async () => {
    const b = use();
    const run = await runningRun(b);
    const timer = waitRecord(run.id, 1, { kind: "timer", name: "sleep", dueAt: T0 + 100 });
    const question = waitRecord(run.id, 2, { kind: "user", name: "Which region?", dueAt: T0 + 100 });
    const later = waitRecord(run.id, 3, { dueAt: T0 + 101 });
    const result = await b.suspend(suspendRequest(run, [timer, question, later], { at: T0 + 100 }));
    expect(result).toStrictEqual({
      paused: false,
      resolved: [
        { ...timer, status: "resolved", resolution: { outcome: "fired", at: T0 + 100 } },
        { ...question, status: "resolved", resolution: { outcome: "timed_out", at: T0 + 100 } },
      ],
      stopRequest: undefined,
    });
    expect((await b.loadWaits(run.id)).map((w) => [w.id, w.status])).toEqual([
      ["w1", "resolved"],
      ["w2", "resolved"],
      ["w3", "open"],
    ]);
    expect((await b.getRun(run.id))?.state).toBe("RUNNING");
  });

  it("resolves a child wait at once when the child has ended, with how it ended", async () => {
    const b = use();
    const parent = await runningRun(b);
    const failed = await runningRun(b, { workerId: "w2", overrides: { parentRunId: parent.id } });
    const error = { name: "ToolFailedError", message: "boom", code: "TOOL_FAILED", retryable: false };
    await endRun(b, failed, "FAILED", { patch: { error, releaseLease: true } });
    const open = await newRun(b, { parentRunId: parent.id });
    const waits = [
      waitRecord(parent.id, 1, { kind: "child", name: failed.id, details: { childRunId: failed.id } }),
      waitRecord(parent.id, 2, { kind: "child", name: open.id, details: { childRunId: open.id } }),
    ];
    const result = await b.suspend(suspendRequest(parent, waits, { pausedReason: "awaiting_child", at: T0 + 1_500 }));
    const ending = { runId: failed.id, state: "FAILED", output: null, error, continuedTo: null };
    expect(result).toStrictEqual({
      paused: false,
      resolved: [
        { ...waits[0], status: "resolved", resolution: { outcome: "child_ended", value: ending, at: T0 + 1_500 } },
      ],
      stopRequest: undefined,
    });
    expect((await b.loadWaits(parent.id))[1]?.status).toBe("open");
  });

  it("pauses on a child that has not ended", async () => {
    const b = use();
    const parent = await runningRun(b);
    const child = await newRun(b, { parentRunId: parent.id });
    const wait = waitRecord(parent.id, 1, { kind: "child", name: child.id, details: { childRunId: child.id } });
    const result = await b.suspend(suspendRequest(parent, [wait], { pausedReason: "awaiting_child" }));
    expect(result.paused).toBe(true);
    expect((await b.getRun(parent.id))?.pausedReason).toBe("awaiting_child");
  });
}

/** `suspend`: stored waits kept, a stale epoch refused, a stop request honoured. */
function suspendKeeps(use: UseBackend): void {
  it("neither duplicates nor overwrites a wait already stored, and counts it when resolved earlier", async () => {
    const b = use();
    const { run, waits } = await pausedRun(b, [
      { seq: 1 },
      { seq: 2, kind: "timer", name: "sleep", dueAt: T0 + 90_000 },
    ]);
    await b.deliverSignal(signalTo(run.id, "approved", "m1", { at: T0 + 200 }));
    const claimed = (await b.claimRun({
      workerId: "w2",
      now: T0 + 300,
      leaseMs: LEASE_MS,
      runId: run.id,
    })) as RunRecord;
    const { run: rerun } = await b.transition({
      runId: run.id,
      from: "RESUMING",
      to: "RUNNING",
      actor: { kind: "worker", id: "w2" },
      reason: "resumed",
      versions: VERSIONS,
      at: T0 + 300,
      fence: { epoch: claimed.epoch },
    });
    const before = await b.loadWaits(run.id);
    // The replay opens the same waits again (as open, w2 with another due time) and a new one.
    const again = [
      waitRecord(run.id, 1),
      waitRecord(run.id, 2, { kind: "timer", name: "sleep", dueAt: T0 + 400 }),
      waitRecord(run.id, 3, { name: "shipped" }),
    ];
    const result = await b.suspend(suspendRequest(rerun, again, { blockedOn: ["w1"], at: T0 + 500 }));
    expect(result).toStrictEqual({ paused: false, resolved: [before[0]], stopRequest: undefined });
    expect(before[0]).toMatchObject({ status: "resolved", resolution: { outcome: "signalled", messageId: "m1" } });
    expect(await b.loadWaits(run.id)).toStrictEqual([before[0], waits[1], again[2]]);
  });

  it("refuses a stale epoch with LeaseLostError and stores nothing", async () => {
    const b = use();
    const run = await runningRun(b);
    await b.deliverSignal(signalTo(run.id, "approved", "m1", { at: T0 + 10 }));
    const before = await storedState(b, run.id);
    const stale = suspendRequest(run, [waitRecord(run.id, 1), waitRecord(run.id, 2)], { epoch: run.epoch - 1 });
    expect(await refusal(b.suspend(stale))).toBeInstanceOf(LeaseLostError);
    expect(await storedState(b, run.id)).toStrictEqual(before);
    expect(before.waits).toEqual([]);
  });

  it("does not pause a run that has a stop request, and says so", async () => {
    const b = use();
    const run = await runningRun(b);
    const stop = stopOf(run.id, "cancel", { at: T0 + 50 });
    await b.requestStop(stop);
    const wait = waitRecord(run.id, 1);
    const result = await b.suspend(suspendRequest(run, [wait]));
    expect(result).toStrictEqual({ paused: false, resolved: [], stopRequest: stop.request });
    expect(await b.getRun(run.id)).toMatchObject({ state: "RUNNING", leaseOwner: "w1", lastTransitionId: 2 });
    expect(await b.loadWaits(run.id)).toStrictEqual([wait]);
  });
}

/** `loadWaits`. */
function describeLoadWaits(use: UseBackend): void {
  describe("loadWaits", () => {
    it("returns the waits in (seq, id) order, and nothing for an unknown run", async () => {
      const b = use();
      const run = await runningRun(b);
      const waits = [
        waitRecord(run.id, 12),
        waitRecord(run.id, 3, {
          id: "r3.2",
          kind: "retry",
          name: "fetch_data",
          details: { attempt: 2 },
          dueAt: T0 + 9,
        }),
        waitRecord(run.id, 5, { kind: "approval", name: "refund", details: { action: "refund", approvers: ["bob"] } }),
        waitRecord(run.id, 3, {
          id: "r3.1",
          kind: "retry",
          name: "fetch_data",
          details: { attempt: 1 },
          dueAt: T0 + 8,
        }),
      ];
      await b.suspend(suspendRequest(run, waits, { blockedOn: ["w12"], at: T0 + 5 }));
      expect((await b.loadWaits(run.id)).map((w) => w.id)).toEqual(["r3.1", "r3.2", "w5", "w12"]);
      expect(await b.loadWaits("ghost")).toEqual([]);
    });
  });
}
