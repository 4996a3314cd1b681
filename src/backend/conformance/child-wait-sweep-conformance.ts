import { describe, expect, it } from "vitest";
import type { RunRecord, WaitRecord } from "../../core/records.ts";
import type { RuntimeBackend } from "../backend.ts";
import { SWEPT_NOTE } from "../rules/child-sweep-rules.ts";
import {
  endRun,
  interruptRun,
  runningRun,
  signalTo,
  suspendRequest,
  T0,
  type UseBackend,
  waitRecord,
} from "./conformance-fixtures.ts";

const ENDED_AT = T0 + 1_000;
const SWEPT_AT = T0 + 5_000;

/** A child wait of `parent` on `child` (id `w<seq>`). */
function childWait(parent: RunRecord, child: RunRecord, seq: number): WaitRecord {
  return waitRecord(parent.id, seq, { kind: "child", name: child.id, details: { childRunId: child.id } });
}

/**
 * A parent and its child (`<parent>.1`), the child ended COMPLETED before the parent stored its
 * wait on it: a child wait left open although its child has ended, as a child's end that missed
 * the wait leaves it. The parent is PAUSED on a signal (the wait it is blocked on), or, with
 * `running`, stays RUNNING (a signal in its inbox resolves that wait at once).
 */
async function strandedWait(
  b: RuntimeBackend,
  options: { running?: boolean; child?: "ended" | "running" | "interrupted" } = {},
): Promise<{ parent: RunRecord; child: RunRecord }> {
  const parent = await runningRun(b);
  let child = await runningRun(b, { overrides: { id: `${parent.id}.1`, parentRunId: parent.id } });
  const state = options.child ?? "ended";
  if (state === "ended") child = (await endRun(b, child, "COMPLETED", { at: ENDED_AT })).run;
  if (state === "interrupted") child = await interruptRun(b, child);
  if (options.running) await b.deliverSignal(signalTo(parent.id, "approved", "m1"));
  const result = await b.suspend(
    suspendRequest(parent, [childWait(parent, child, 1), waitRecord(parent.id, 2)], { blockedOn: ["w2"] }),
  );
  expect(result.paused).toBe(!options.running);
  return { parent: (await b.getRun(parent.id)) as RunRecord, child };
}

/** `resolveEndedChildWaits`: the sweep that resolves a child wait a child's end left open. */
export function describeChildWaitSweep(use: UseBackend): void {
  describeResolveEndedChildWaits(use);
}

/** `resolveEndedChildWaits`. */
function describeResolveEndedChildWaits(use: UseBackend): void {
  describe("resolveEndedChildWaits", () => {
    sweepResolves(use);
    sweepLeaves(use);
  });
}

/** The sweep: a wait whose child has ended, resolved once. */
function sweepResolves(use: UseBackend): void {
  it("resolves a child wait whose child has ended, once: the PAUSED parent goes RESUMING, saying why", async () => {
    const b = use();
    const { parent, child } = await strandedWait(b);
    expect(parent.state).toBe("PAUSED");
    const before = await b.listTransitions(parent.id);

    const resolved = await b.resolveEndedChildWaits(SWEPT_AT, 100);
    const ending = { runId: child.id, state: "COMPLETED", output: { done: true }, error: null, continuedTo: null };
    expect(resolved).toEqual([
      {
        ...childWait(parent, child, 1),
        status: "resolved",
        resolution: {
          outcome: "child_ended",
          value: expect.objectContaining(ending),
          note: SWEPT_NOTE,
          at: SWEPT_AT,
        },
      },
    ]);
    const waits = await b.loadWaits(parent.id);
    expect(waits.map((w) => [w.id, w.status])).toEqual([
      ["w1", "resolved"],
      ["w2", "open"],
    ]);
    expect(waits[0]).toEqual(resolved[0]);
    expect(await b.getRun(parent.id)).toMatchObject({ state: "RESUMING", pausedReason: null });
    const transitions = await b.listTransitions(parent.id);
    expect(transitions).toHaveLength(before.length + 1);
    expect(transitions.at(-1)).toMatchObject({
      id: before.length + 1,
      from: "PAUSED",
      to: "RESUMING",
      at: SWEPT_AT,
      actor: { kind: "system", id: "cairn" },
      reason: `child run ${child.id} ended COMPLETED; its wait w1 was still open, resolved by the sweep of child waits`,
    });

    // Once: nothing is left to sweep.
    expect(await b.resolveEndedChildWaits(SWEPT_AT + 1_000, 100)).toEqual([]);
    expect(await b.listTransitions(parent.id)).toEqual(transitions);
    expect(await b.loadWaits(parent.id)).toEqual(waits);
  });
}

/** The sweep: RUNNING parents, children that have not ended, limits and concurrent sweeps. */
function sweepLeaves(use: UseBackend): void {
  it("resolves the wait of a RUNNING parent without a transition, as the child's end would have", async () => {
    const b = use();
    const { parent } = await strandedWait(b, { running: true });
    expect(parent.state).toBe("RUNNING");
    const before = await b.listTransitions(parent.id);
    const [resolved, ...more] = await b.resolveEndedChildWaits(SWEPT_AT, 100);
    expect(more).toEqual([]);
    expect(resolved).toMatchObject({ runId: parent.id, id: "w1", status: "resolved" });
    expect(await b.getRun(parent.id)).toEqual(parent);
    expect(await b.listTransitions(parent.id)).toEqual(before);
  });

  it("leaves the waits on children that have not ended, INTERRUPTED ones included", async () => {
    const b = use();
    const running = await strandedWait(b, { child: "running" });
    const interrupted = await strandedWait(b, { child: "interrupted" });
    expect(await b.resolveEndedChildWaits(SWEPT_AT, 100)).toEqual([]);
    for (const { parent } of [running, interrupted]) {
      expect(await b.getRun(parent.id)).toEqual(parent);
      expect((await b.loadWaits(parent.id)).map((w) => w.status)).toEqual(["open", "open"]);
    }
  });

  it("sweeps at most `limit` runs a call, and each wait once when sweeps run at the same time", async () => {
    const b = use();
    const first = await strandedWait(b);
    const second = await strandedWait(b);
    const one = await b.resolveEndedChildWaits(SWEPT_AT, 1);
    expect(one).toHaveLength(1);
    const rest = await Promise.all([b.resolveEndedChildWaits(SWEPT_AT, 100), b.resolveEndedChildWaits(SWEPT_AT, 100)]);
    expect([...one, ...rest.flat()].map((w) => w.runId).sort()).toEqual([first.parent.id, second.parent.id].sort());
    for (const { parent } of [first, second]) {
      const transitions = await b.listTransitions(parent.id);
      expect(transitions.filter((t) => t.to === "RESUMING")).toHaveLength(1);
      expect((await b.getRun(parent.id))?.state).toBe("RESUMING");
    }
  });
}
