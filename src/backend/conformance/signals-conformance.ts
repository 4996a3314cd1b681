import { describe, expect, it } from "vitest";
import { RunNotFoundError, RunNotOpenError, SignalInboxFullError } from "../../core/errors.ts";
import type { RunRecord, SignalRecord, WaitRecord } from "../../core/records.ts";
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
  USER,
  type UseBackend,
  VERSIONS,
  waitRecord,
} from "./conformance-fixtures.ts";

/** deliverSignal, listSignals, fireDueWaits and nextDueAt. */
export function describeSignals(use: UseBackend): void {
  describe("deliverSignal", () => {
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
  });

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
