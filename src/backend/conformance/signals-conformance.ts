import { describe, expect, it } from "vitest";
import { RunNotFoundError, RunNotOpenError, SignalInboxFullError } from "../../core/errors.ts";
import type { SignalRecord } from "../../core/records.ts";
import {
  endRun,
  interruptRun,
  pausedRun,
  refusal,
  runningRun,
  signalTo,
  storedState,
  suspendRequest,
  T0,
  type UseBackend,
  VERSIONS,
  waitRecord,
} from "./conformance-fixtures.ts";

/** deliverSignal and listSignals. */
export function describeSignals(use: UseBackend): void {
  describeDeliverSignal(use);
  describeListSignals(use);
}

/** `deliverSignal`. */
function describeDeliverSignal(use: UseBackend): void {
  describe("deliverSignal", () => {
    deliverSignalResolves(use);
    deliverSignalInbox(use);
  });
}

/** `deliverSignal`: a wait resolved, or a full inbox refused. */
function deliverSignalResolves(use: UseBackend): void {
  it("resolves the oldest open wait of the signal's name and resumes the PAUSED run", async () => {
    const b = use();
    // Oldest by seq: w5 before w12 (whose id sorts first as text).
    const { run, waits } = await pausedRun(b, [{ seq: 12 }, { seq: 5 }, { seq: 7, name: "shipped" }]);
    const other = await b.deliverSignal(signalTo(run.id, "cancelled", "m0", { at: T0 + 150 }));
    expect(other).toMatchObject({ duplicate: false, deliveredTo: null, transition: undefined });
    expect(other.run).toMatchObject({ state: "PAUSED", lastTransitionId: 3 });

    const actor = { kind: "system", id: "webhook" } as const;
    const request = signalTo(run.id, "approved", "m1", { payload: { by: "bob" }, actor, at: T0 + 200 });
    const result = await b.deliverSignal(request);
    const signal: SignalRecord = {
      runId: run.id,
      messageId: "m1",
      name: "approved",
      payload: { by: "bob" },
      receivedAt: T0 + 200,
      consumedBy: "w5",
    };
    expect(result).toMatchObject({ duplicate: false, deliveredTo: "w5", signal });
    expect(result.run).toMatchObject({ state: "RESUMING", pausedReason: null, lastTransitionId: 4 });
    expect(result.transition).toMatchObject({ id: 4, from: "PAUSED", to: "RESUMING", actor, at: T0 + 200 });
    expect(result.transition?.versions).toEqual(VERSIONS);
    const stored = await b.loadWaits(run.id);
    expect(stored.find((w) => w.id === "w5")).toStrictEqual({
      ...waits[1],
      status: "resolved",
      resolution: { outcome: "signalled", value: { by: "bob" }, messageId: "m1", by: actor, at: T0 + 200 },
    });
    expect(stored.filter((w) => w.status === "open").map((w) => w.id)).toEqual(["w7", "w12"]);
    expect(await b.getRun(run.id)).toStrictEqual(result.run);
    expect((await b.listTransitions(run.id)).at(-1)).toStrictEqual(result.transition);

    // The next one of that name goes to w12; the run is RESUMING already, so no transition.
    const next = await b.deliverSignal(signalTo(run.id, "approved", "m2", { at: T0 + 250 }));
    expect(next).toMatchObject({ deliveredTo: "w12", transition: undefined, run: { state: "RESUMING" } });
    expect(await b.listTransitions(run.id)).toHaveLength(4);
  });

  it("refuses a signal no wait takes when the inbox holds maxUnread unread ones, writing nothing", async () => {
    const b = use();
    const { run } = await pausedRun(b, [{ seq: 1 }]);
    for (const id of ["m1", "m2"]) {
      expect((await b.deliverSignal(signalTo(run.id, "note", id, { maxUnread: 2 }))).deliveredTo).toBeNull();
    }
    const before = await storedState(b, run.id);
    const error = await refusal(b.deliverSignal(signalTo(run.id, "note", "m3", { maxUnread: 2 })));
    expect(error).toBeInstanceOf(SignalInboxFullError);
    expect(error).toMatchObject({ code: "SIGNAL_INBOX_FULL", unread: 2, limit: 2 });
    expect(await storedState(b, run.id)).toStrictEqual(before);
    // A repeat is acknowledged; a signal the open wait takes is delivered; no limit, no refusal.
    expect((await b.deliverSignal(signalTo(run.id, "note", "m1", { maxUnread: 2 }))).duplicate).toBe(true);
    const taken = await b.deliverSignal(signalTo(run.id, "approved", "m4", { maxUnread: 2 }));
    expect(taken.deliveredTo).toBe("w1");
    expect((await b.deliverSignal(signalTo(run.id, "note", "m5"))).deliveredTo).toBeNull();
    expect(await b.listSignals(run.id)).toHaveLength(4);
  });
}

/** `deliverSignal`: duplicates, the inbox, closed and unknown runs, races. */
function deliverSignalInbox(use: UseBackend): void {
  it("says duplicate for a message id already in the inbox and delivers nothing", async () => {
    const b = use();
    const { run } = await pausedRun(b, [{ seq: 1 }, { seq: 2 }]);
    const first = await b.deliverSignal(signalTo(run.id, "approved", "m1", { payload: 1 }));
    expect(first.deliveredTo).toBe("w1");
    const before = await storedState(b, run.id);
    const again = await b.deliverSignal(signalTo(run.id, "approved", "m1", { payload: 2, at: T0 + 900 }));
    expect(again).toMatchObject({ duplicate: true, deliveredTo: "w1", signal: first.signal, transition: undefined });
    expect(await storedState(b, run.id)).toStrictEqual(before);
    expect(before.waits[1]?.status).toBe("open");

    // A duplicate of a signal still waiting in the inbox.
    const idle = await runningRun(b);
    const kept = await b.deliverSignal(signalTo(idle.id, "later", "m1", { payload: "a" }));
    const dup = await b.deliverSignal(signalTo(idle.id, "later", "m1", { payload: "b" }));
    expect(dup).toMatchObject({ duplicate: true, deliveredTo: null, signal: kept.signal });
    expect(await b.listSignals(idle.id)).toStrictEqual([kept.signal]);
  });

  it("keeps a signal with no open wait in the inbox", async () => {
    const b = use();
    const run = await runningRun(b);
    const result = await b.deliverSignal(signalTo(run.id, "approved", "m1", { payload: null }));
    expect(result).toMatchObject({ duplicate: false, deliveredTo: null, transition: undefined });
    expect(result.run).toMatchObject({ state: "RUNNING", lastTransitionId: 2 });
    expect(await b.listSignals(run.id)).toStrictEqual([{ ...result.signal, payload: null, consumedBy: null }]);
  });

  it("refuses a run that has ended with RunNotOpenError, keeps a signal for an INTERRUPTED run", async () => {
    const b = use();
    const done = await runningRun(b);
    await endRun(b, done);
    expect(await refusal(b.deliverSignal(signalTo(done.id, "approved", "m1")))).toBeInstanceOf(RunNotOpenError);
    expect(await b.listSignals(done.id)).toEqual([]);

    const lost = await interruptRun(b, await runningRun(b));
    const kept = await b.deliverSignal(signalTo(lost.id, "approved", "m1"));
    expect(kept).toMatchObject({ duplicate: false, deliveredTo: null, run: { state: "INTERRUPTED" } });
    expect(await b.listSignals(lost.id)).toHaveLength(1);
  });

  it("refuses an unknown run with RunNotFoundError", async () => {
    expect(await refusal(use().deliverSignal(signalTo("ghost", "approved", "m1")))).toBeInstanceOf(RunNotFoundError);
  });

  it("stores one of two concurrent deliveries of one message id", async () => {
    const b = use();
    const { run } = await pausedRun(b, [{ seq: 1 }, { seq: 2 }]);
    const results = await Promise.all([
      b.deliverSignal(signalTo(run.id, "approved", "m1", { payload: "a" })),
      b.deliverSignal(signalTo(run.id, "approved", "m1", { payload: "b" })),
    ]);
    expect(results.map((r) => r.duplicate).sort()).toEqual([false, true]);
    expect(await b.listSignals(run.id)).toHaveLength(1);
    expect((await b.loadWaits(run.id)).map((w) => w.status)).toEqual(["resolved", "open"]);
    expect(await b.listTransitions(run.id)).toHaveLength(4);
  });

  it("never loses a signal that races a suspend on its wait", async () => {
    const b = use();
    const run = await runningRun(b);
    const wait = waitRecord(run.id, 1);
    const [suspended] = await Promise.all([
      b.suspend(suspendRequest(run, [wait])),
      b.deliverSignal(signalTo(run.id, "approved", "m1")),
    ]);
    const [stored] = await b.loadWaits(run.id);
    expect(stored).toMatchObject({ status: "resolved", resolution: { outcome: "signalled", messageId: "m1" } });
    expect((await b.listSignals(run.id))[0]?.consumedBy).toBe("w1");
    // Either the signal came first (not paused) or it woke the paused run.
    expect((await b.getRun(run.id))?.state).toBe(suspended.paused ? "RESUMING" : "RUNNING");
  });
}

/** `listSignals`. */
function describeListSignals(use: UseBackend): void {
  describe("listSignals", () => {
    it("returns the inbox in arrival order, payloads as sent", async () => {
      const b = use();
      const run = await runningRun(b);
      const payloads = [{ nested: { list: [1, "two", null], empty: {} } }, "text", 0, false, null, [[]]];
      const sent: SignalRecord[] = [];
      for (const [i, payload] of payloads.entries()) {
        const messageId = `m-${9 - i}`;
        const { signal } = await b.deliverSignal(signalTo(run.id, `s${i % 2}`, messageId, { payload, at: T0 + i }));
        sent.push(signal);
        expect(signal).toStrictEqual({
          runId: run.id,
          messageId,
          name: `s${i % 2}`,
          payload,
          receivedAt: T0 + i,
          consumedBy: null,
        });
      }
      expect(await b.listSignals(run.id)).toStrictEqual(sent);
      expect(await b.listSignals("ghost")).toEqual([]);
    });
  });
}
