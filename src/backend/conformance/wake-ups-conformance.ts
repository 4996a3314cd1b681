import { describe, expect, it } from "vitest";
import type { RuntimeBackend, Wake } from "../backend.ts";
import {
  endRun,
  move,
  newRun,
  pausedRun,
  runInput,
  runningRun,
  signalTo,
  stopOf,
  T0,
  type UseBackend,
} from "./conformance-fixtures.ts";
import { unresolvedRun } from "./effects-conformance.ts";

/** Collects the wake-ups a backend sends, with a way to wait for one. */
async function listen(backend: RuntimeBackend) {
  const heard: Wake[] = [];
  const waiters: (() => void)[] = [];
  if (!backend.subscribe) throw new Error("this backend has no subscribe()");
  const unsubscribe = await backend.subscribe((wake) => {
    heard.push(wake);
    for (const w of waiters.splice(0)) w();
  });
  const until = async (check: (w: Wake) => boolean, what: string) => {
    const deadline = Date.now() + 5000;
    while (!heard.some(check)) {
      if (Date.now() > deadline) throw new Error(`no wake-up: ${what} (heard ${JSON.stringify(heard)})`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  };
  return { heard, until, unsubscribe };
}

/** subscribe(): wake-ups for runnable and ended runs, after the write. */
export function describeWakeUps(use: UseBackend): void {
  describeSubscribe(use);
}

/** `subscribe`. */
function describeSubscribe(use: UseBackend): void {
  describe("subscribe", () => {
    subscribeRunnable(use);
    subscribeStops(use);
  });
}

/** `subscribe`: runs that became runnable or ended. */
function subscribeRunnable(use: UseBackend): void {
  it("wakes on a new run, a move to RESUMING and a terminal state, not on other moves", async () => {
    const b = use();
    const { heard, until, unsubscribe } = await listen(b);
    try {
      const run = await newRun(b);
      await until((w) => w.kind === "runnable" && w.runId === run.id, "new run");
      // The run is visible to whoever was woken.
      expect((await b.getRun(run.id))?.state).toBe("PENDING");

      const running = await runningRun(b);
      const interrupted = await b.transition(
        move(running, "RUNNING", "INTERRUPTED", {
          fence: { takeover: { epoch: running.epoch, leaseExpiresAt: running.leaseExpiresAt } },
        }),
      );
      const resuming = await b.transition(
        move(interrupted.run, "INTERRUPTED", "RESUMING", { fence: { unowned: true, now: T0 } }),
      );
      await until((w) => w.kind === "runnable" && w.runId === running.id, "RESUMING");
      const claimed = await b.claimRun({ workerId: "w9", now: T0, leaseMs: 1000, runId: running.id });
      const rerun = await b.transition(move(claimed ?? resuming.run, "RESUMING", "RUNNING"));
      await b.transition(move(rerun.run, "RUNNING", "COMPLETED", { patch: { output: 1, releaseLease: true } }));
      const ends = () => heard.filter((w) => w.kind === "ended" && w.runId === running.id).length;
      await until(() => ends() >= 2, "COMPLETED (after INTERRUPTED)");
      // Created; INTERRUPTED (terminal: it ended too); RESUMING; COMPLETED. RUNNING sends nothing.
      const kinds = heard.filter((w) => "runId" in w && w.runId === running.id).map((w) => w.kind);
      expect(kinds).toEqual(["runnable", "ended", "runnable", "ended"]);
    } finally {
      await unsubscribe();
    }
  });

  it("wakes a worker for a reconciled run (RECONCILING), and nobody for a cancel that waits for the operator", async () => {
    const b = use();
    const { heard, until, unsubscribe } = await listen(b);
    try {
      const reconciled = await unresolvedRun(b);
      const waiting = await unresolvedRun(b);
      await until((w) => w.kind === "runnable" && w.runId === waiting.run.id, "created");
      // NEEDS_RECONCILIATION waits for an operator: nobody is woken to claim it, and it has not ended.
      expect(heard.filter((w) => "runId" in w && w.runId === reconciled.run.id)).toStrictEqual([
        { kind: "runnable", runId: reconciled.run.id },
      ]);
      await b.transition(
        move(reconciled.run, "NEEDS_RECONCILIATION", "RECONCILING", {
          actor: { kind: "user", id: "op" },
          fence: { unowned: true, now: T0 + 2_000 },
        }),
      );
      await until(
        () => heard.filter((w) => w.kind === "runnable" && w.runId === reconciled.run.id).length === 2,
        "RECONCILING is runnable",
      );
      // A cancel of a run that needs reconciliation waits for the operator's decision: the run
      // neither ends nor becomes runnable, and no worker holds it.
      await b.requestStop(stopOf(waiting.run.id, "cancel"));
      const marker = await newRun(b);
      await until((w) => "runId" in w && w.runId === marker.id, "a run created after the cancel");
      expect(heard.filter((w) => "runId" in w && w.runId === waiting.run.id)).toStrictEqual([
        { kind: "runnable", runId: waiting.run.id },
      ]);
    } finally {
      await unsubscribe();
    }
  });
}

/** `subscribe`: unsubscribing, and stop requests. */
function subscribeStops(use: UseBackend): void {
  it("sends nothing after unsubscribe", async () => {
    const b = use();
    const { heard, until, unsubscribe } = await listen(b);
    const first = await newRun(b);
    await until((w) => "runId" in w && w.runId === first.id, "first run");
    await unsubscribe();
    const second = await newRun(b);
    await new Promise((r) => setTimeout(r, 200));
    expect(heard.some((w) => "runId" in w && w.runId === second.id)).toBe(false);
  });

  it("wakes a worker for a stop request and for a run that a wait, a cancel or a parent's end made runnable", async () => {
    const b = use();
    const { until, unsubscribe } = await listen(b);
    try {
      const running = await runningRun(b);
      await b.requestStop(stopOf(running.id, "cancel"));
      await until((w) => w.kind === "stop" && w.runId === running.id, "stop of a RUNNING run");

      const signalled = await pausedRun(b, [{ seq: 1 }]);
      await b.deliverSignal(signalTo(signalled.run.id, "approved", "m1"));
      await until((w) => w.kind === "runnable" && w.runId === signalled.run.id, "signal resumed the run");

      const timed = await pausedRun(b, [{ seq: 1, kind: "timer", name: "sleep", dueAt: T0 + 500 }]);
      await b.fireDueWaits(T0 + 500, 10);
      await until((w) => w.kind === "runnable" && w.runId === timed.run.id, "timer resumed the run");

      const cancelled = await pausedRun(b, [{ seq: 1 }]);
      await b.requestStop(stopOf(cancelled.run.id, "cancel"));
      await until((w) => w.kind === "runnable" && w.runId === cancelled.run.id, "PAUSED run now CANCELLING");

      const parent = await runningRun(b);
      const child = await runningRun(b, {
        workerId: "w2",
        overrides: { parentRunId: parent.id, parentClosePolicy: "cancel" },
      });
      const successor = runInput();
      await endRun(b, parent, "COMPLETED", { successor });
      await until((w) => w.kind === "stop" && w.runId === child.id, "child of an ended parent");
      await until((w) => w.kind === "runnable" && w.runId === successor.id, "successor created");
      await until((w) => w.kind === "ended" && w.runId === parent.id, "parent ended");
    } finally {
      await unsubscribe();
    }
  });
}
