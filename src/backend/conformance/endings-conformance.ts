import { describe, expect, it } from "vitest";
import { WaitClosedError } from "../../core/errors.ts";
import type { RunRecord } from "../../core/records.ts";
import {
  endRun,
  interruptRun,
  LEASE_MS,
  move,
  newRun,
  pausedRun,
  refusal,
  runInput,
  runningRun,
  signalTo,
  storedState,
  suspendRequest,
  T0,
  type UseBackend,
  VERSIONS,
  waitRecord,
} from "./conformance-fixtures.ts";

const ENDED_AT = T0 + 1_000;

/** A child wait of `parent` on `child` (id `w<seq>`). */
function childWait(parent: RunRecord, child: RunRecord, seq = 1) {
  return waitRecord(parent.id, seq, { kind: "child", name: child.id, details: { childRunId: child.id } });
}

/** What a transition into a terminal state does besides (planEnd), continueAsNew, listRuns by parent. */
export function describeEndings(use: UseBackend): void {
  describeEndingTransition(use);
  describeSuccessor(use);
  describeListRunsByParent(use);
}

/** `transition: a run that ends`. */
function describeEndingTransition(use: UseBackend): void {
  describe("transition: a run that ends", () => {
    endingClosesWaits(use);
    endingStopsChildren(use);
    endingInterrupted(use);
  });
}

/** A run's end: its waits closed, its parent's wait on it resolved. */
function endingClosesWaits(use: UseBackend): void {
  it("closes its open waits and leaves its resolved ones", async () => {
    const b = use();
    const { run } = await pausedRun(b, [{ seq: 1 }, { seq: 2, kind: "timer", name: "sleep", dueAt: T0 + 90_000 }]);
    await b.deliverSignal(signalTo(run.id, "approved", "m1"));
    const claimed = (await b.claimRun({ workerId: "w2", now: T0 + 300, leaseMs: LEASE_MS })) as RunRecord;
    await b.transition(move(claimed, "RESUMING", "RUNNING", { at: T0 + 300 }));
    const resolved = (await b.loadWaits(run.id))[0];
    const ended = await endRun(b, claimed, "FAILED", { at: ENDED_AT });
    expect(ended.run.state).toBe("FAILED");
    const waits = await b.loadWaits(run.id);
    expect(waits[0]).toStrictEqual(resolved);
    expect(waits[1]).toMatchObject({
      status: "closed",
      dueAt: T0 + 90_000,
      resolution: { outcome: "closed", at: ENDED_AT },
    });
    expect(await b.nextDueAt()).toBeNull();
    expect(await b.fireDueWaits(T0 + 100_000, 100)).toEqual([]);
    const late = b.resolveWait({
      runId: run.id,
      waitId: "w2",
      decide: () => ({ outcome: "fired" }),
      actor: { kind: "user", id: "op" },
      reason: "late",
      versions: VERSIONS,
      at: T0 + 2_000,
    });
    expect(await refusal(late)).toBeInstanceOf(WaitClosedError);
  });

  it("resolves the child wait of a PAUSED parent with how the child ended and resumes the parent", async () => {
    const b = use();
    const parent = await runningRun(b);
    const child = await newRun(b, { parentRunId: parent.id });
    const wait = childWait(parent, child);
    expect((await b.suspend(suspendRequest(parent, [wait], { pausedReason: "awaiting_child" }))).paused).toBe(true);
    const claimed = (await b.claimRun({
      workerId: "w2",
      now: T0 + 200,
      leaseMs: LEASE_MS,
      runId: child.id,
    })) as RunRecord;
    await b.transition(move(claimed, "PENDING", "RUNNING", { at: T0 + 200 }));
    const ended = await b.transition(
      move(claimed, "RUNNING", "COMPLETED", { at: ENDED_AT, patch: { output: { total: 3 }, releaseLease: true } }),
    );
    expect(ended.run).toMatchObject({ id: child.id, state: "COMPLETED" });
    expect(ended.transition).toMatchObject({ runId: child.id, from: "RUNNING", to: "COMPLETED" });
    expect(await b.loadWaits(parent.id)).toStrictEqual([
      {
        ...wait,
        status: "resolved",
        resolution: {
          outcome: "child_ended",
          value: { runId: child.id, state: "COMPLETED", output: { total: 3 }, error: null, continuedTo: null },
          at: ENDED_AT,
        },
      },
    ]);
    expect(await b.getRun(parent.id)).toMatchObject({ state: "RESUMING", lastTransitionId: 4, updatedAt: ENDED_AT });
    const last = (await b.listTransitions(parent.id)).at(-1);
    expect(last).toMatchObject({ id: 4, from: "PAUSED", to: "RESUMING", at: ENDED_AT, actor: { kind: "system" } });
    expect(last?.reason).toContain(child.id);
  });
}

/** A run's end: its open children stopped by their parent-close policy. */
function endingStopsChildren(use: UseBackend): void {
  it("stops its open children whose policy is cancel", async () => {
    const b = use();
    const parent = await runningRun(b);
    const policy = { parentRunId: parent.id, parentClosePolicy: "cancel" as const };
    const pending = await newRun(b, policy);
    const claimedPending = await newRun(b, policy);
    await b.claimRun({ workerId: "w3", now: T0 + 500, leaseMs: LEASE_MS, runId: claimedPending.id });
    const { run: paused } = await pausedRun(b, [{ seq: 1 }], { overrides: policy });
    const running = await runningRun(b, { workerId: "w2", overrides: policy });
    const interrupted = await interruptRun(b, await runningRun(b, { overrides: policy }));
    const done = await runningRun(b, { overrides: policy });
    await endRun(b, done, "COMPLETED", { at: T0 + 500 });
    const doneBefore = await storedState(b, done.id);

    const { run: ended } = await endRun(b, parent, "COMPLETED", { at: ENDED_AT });
    expect(ended.state).toBe("COMPLETED");
    const stored = async (r: RunRecord) => (await b.getRun(r.id)) as RunRecord;
    const stop = { kind: "cancel", by: { kind: "system" }, at: ENDED_AT };
    expect(await stored(pending)).toMatchObject({
      state: "CANCELLED",
      stopRequest: stop,
      error: { code: "CANCELLED" },
    });
    expect((await stored(pending)).stopRequest?.reason).toContain(parent.id);
    expect(await stored(claimedPending)).toMatchObject({ state: "PENDING", leaseOwner: "w3", stopRequest: stop });
    expect(await stored(paused)).toMatchObject({ state: "CANCELLING", stopRequest: stop });
    expect(await stored(running)).toMatchObject({ state: "RUNNING", leaseOwner: "w2", stopRequest: stop });
    expect(await stored(interrupted)).toMatchObject({ state: "CANCELLING", stopRequest: stop });
    expect(await storedState(b, done.id)).toStrictEqual(doneBefore);
    expect(await b.listStopRequested("w2")).toEqual([running.id]);
    expect(await b.listStopRequested("w3")).toEqual([claimedPending.id]);
    expect((await b.listTransitions(paused.id)).at(-1)).toMatchObject({
      from: "PAUSED",
      to: "CANCELLING",
      at: ENDED_AT,
      actor: { kind: "system" },
    });
  });

  it("suspends its open children whose policy is suspend (the default) and leaves those it abandons", async () => {
    const b = use();
    const parent = await runningRun(b);
    const { run: byDefault } = await pausedRun(b, [{ seq: 1 }], { overrides: { parentRunId: parent.id } });
    expect(byDefault.parentClosePolicy).toBe("suspend");
    const suspendPolicy = { parentRunId: parent.id, parentClosePolicy: "suspend" as const };
    const running = await runningRun(b, { workerId: "w2", overrides: suspendPolicy });
    const pending = await newRun(b, suspendPolicy);
    const abandonPolicy = { parentRunId: parent.id, parentClosePolicy: "abandon" as const };
    const { run: abandoned } = await pausedRun(b, [{ seq: 1 }], { overrides: abandonPolicy });
    const abandonedRunning = await runningRun(b, { workerId: "w2", overrides: abandonPolicy });
    const before = [await storedState(b, abandoned.id), await storedState(b, abandonedRunning.id)];

    await endRun(b, parent, "BLOCKED", { at: ENDED_AT });
    const stop = { kind: "suspend", by: { kind: "system" }, at: ENDED_AT };
    expect(await b.getRun(byDefault.id)).toMatchObject({ state: "RESUMING", stopRequest: stop });
    expect(await b.getRun(running.id)).toMatchObject({ state: "RUNNING", stopRequest: stop });
    expect(await b.getRun(pending.id)).toMatchObject({ state: "PENDING", stopRequest: stop });
    expect(await b.listStopRequested("w2")).toEqual([running.id]);
    expect([await storedState(b, abandoned.id), await storedState(b, abandonedRunning.id)]).toStrictEqual(before);
  });
}

/** A run interrupted: none of this. */
function endingInterrupted(use: UseBackend): void {
  it("does none of this when it becomes INTERRUPTED", async () => {
    const b = use();
    const parent = await runningRun(b);
    const child = await runningRun(b, { workerId: "w2", overrides: { parentRunId: parent.id } });
    await b.suspend(suspendRequest(parent, [childWait(parent, child)], { pausedReason: "awaiting_child" }));
    const waits = [waitRecord(child.id, 1, { kind: "timer", name: "sleep", dueAt: T0 }), waitRecord(child.id, 2)];
    expect((await b.suspend(suspendRequest(child, waits))).paused).toBe(false);
    const { run: grandchild } = await pausedRun(b, [{ seq: 1 }], {
      overrides: { parentRunId: child.id, parentClosePolicy: "cancel" },
    });
    const before = [await storedState(b, parent.id), await storedState(b, grandchild.id)];
    const childWaits = await b.loadWaits(child.id);

    await interruptRun(b, child);
    expect(await b.loadWaits(child.id)).toStrictEqual(childWaits);
    expect(childWaits[1]?.status).toBe("open");
    expect([await storedState(b, parent.id), await storedState(b, grandchild.id)]).toStrictEqual(before);
    expect(before[0]?.run?.state).toBe("PAUSED");
  });
}

/** `transition with a successor (continueAsNew)`. */
function describeSuccessor(use: UseBackend): void {
  describe("transition with a successor (continueAsNew)", () => {
    it("creates the successor in the same call, links both ways and hands it the key", async () => {
      const b = use();
      const first = await runningRun(b, { overrides: { key: "session-1" } });
      const secondInput = runInput({ key: "session-1", input: { turn: 2 }, at: ENDED_AT, reason: "continued" });
      const ended = await endRun(b, first, "COMPLETED", { at: ENDED_AT, successor: secondInput });
      expect(ended.run).toMatchObject({
        id: first.id,
        state: "COMPLETED",
        continuedTo: secondInput.id,
        continuedFrom: null,
      });
      expect(await b.getRun(first.id)).toStrictEqual(ended.run);
      const second = await b.getRun(secondInput.id);
      expect(second).toMatchObject({
        state: "PENDING",
        key: "session-1",
        input: { turn: 2 },
        epoch: 0,
        leaseOwner: null,
        lastTransitionId: 1,
        continuedFrom: first.id,
        continuedTo: null,
        createdAt: ENDED_AT,
      });
      expect(await b.listTransitions(secondInput.id)).toMatchObject([
        { id: 1, from: null, to: "PENDING", reason: "continued", at: ENDED_AT },
      ]);
      const again = await b.createRun(runInput({ key: "session-1" }));
      expect(again).toStrictEqual({ run: second, created: false });

      // The chain goes on: the key follows the newest run.
      const claimed = (await b.claimRun({ workerId: "w2", now: ENDED_AT, leaseMs: LEASE_MS })) as RunRecord;
      expect(claimed.id).toBe(secondInput.id);
      await b.transition(move(claimed, "PENDING", "RUNNING", { at: ENDED_AT }));
      const thirdInput = runInput({ key: "session-1", input: { turn: 3 }, at: T0 + 2_000 });
      await endRun(b, claimed, "COMPLETED", { at: T0 + 2_000, successor: thirdInput });
      expect((await b.createRun(runInput({ key: "session-1" }))).run.id).toBe(thirdInput.id);
      expect((await b.getRun(first.id))?.continuedTo).toBe(secondInput.id);
      expect((await b.getRun(thirdInput.id))?.continuedFrom).toBe(secondInput.id);
    });

    it("creates no successor when the transition is refused", async () => {
      const b = use();
      const first = await runningRun(b, { overrides: { key: "session-2" } });
      const before = await storedState(b, first.id);
      const stale = runInput({ key: "session-2" });
      const staleEpoch = endRun(b, { id: first.id, epoch: first.epoch - 1 }, "COMPLETED", { successor: stale });
      await refusal(staleEpoch);
      const notTerminal = runInput({ key: "session-2" });
      await refusal(b.transition(move(first, "RUNNING", "CANCELLING", { successor: notTerminal })));
      const taken = await newRun(b);
      const takenBefore = await storedState(b, taken.id);
      await refusal(endRun(b, first, "COMPLETED", { successor: runInput({ id: taken.id, key: "session-2" }) }));

      expect(await storedState(b, first.id)).toStrictEqual(before);
      expect(await storedState(b, taken.id)).toStrictEqual(takenBefore);
      expect(await b.getRun(stale.id)).toBeUndefined();
      expect(await b.getRun(notTerminal.id)).toBeUndefined();
      expect((await b.createRun(runInput({ key: "session-2" }))).run.id).toBe(first.id);
    });
  });
}

/** `listRuns by parent`. */
function describeListRunsByParent(use: UseBackend): void {
  describe("listRuns by parent", () => {
    it("lists only the children of a run, newest first, with their parent-close policy", async () => {
      const b = use();
      const parent = await newRun(b);
      const other = await newRun(b);
      const older = await newRun(b, { parentRunId: parent.id, at: T0 + 1 });
      const newer = await newRun(b, { parentRunId: parent.id, parentClosePolicy: "cancel", at: T0 + 2 });
      await newRun(b, { parentRunId: other.id, at: T0 + 3 });
      const children = await b.listRuns({ parentRunId: parent.id });
      expect(children.map((r) => [r.id, r.parentRunId, r.parentClosePolicy])).toEqual([
        [newer.id, parent.id, "cancel"],
        [older.id, parent.id, "suspend"],
      ]);
      expect(children[0]).toStrictEqual(await b.getRun(newer.id));
      await b.requestStop({
        runId: older.id,
        request: { kind: "cancel", by: { kind: "user", id: "op" }, reason: "x", at: T0 + 5 },
        versions: VERSIONS,
      });
      // A child is cancelled through a worker, so that its end reaches a parent waiting on it:
      // unlike a top-level run, a PENDING child keeps the request and stays PENDING.
      expect((await b.getRun(older.id))?.stopRequest?.kind).toBe("cancel");
      expect((await b.listRuns({ parentRunId: parent.id, state: "PENDING" })).map((r) => r.id)).toEqual([
        newer.id,
        older.id,
      ]);
      expect(await b.listRuns({ parentRunId: parent.id, state: "CANCELLED" })).toEqual([]);
      expect(await b.listRuns({ parentRunId: older.id })).toEqual([]);
      expect(parent.parentRunId).toBeNull();
    });
  });
}
