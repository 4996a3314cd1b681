import { describe, expect, it } from "vitest";
import { IllegalTransitionError, LeaseLostError, RunNotFoundError, type SerializedError } from "../../core/errors.ts";
import type { RunRecord } from "../../core/records.ts";
import type { RuntimeBackend } from "../backend.ts";
import {
  fullStep,
  LEASE_MS,
  move,
  newRun,
  refusal,
  runningRun,
  T0,
  type UseBackend,
  VERSIONS,
  WORKER,
} from "./conformance-fixtures.ts";

/** The stored run and its transitions, to show that a refused write stored nothing. */
async function snapshot(backend: RuntimeBackend, runId: string) {
  return { run: await backend.getRun(runId), transitions: await backend.listTransitions(runId) };
}

const SYSTEM = { kind: "system", id: "recovery" } as const;

/** transition and listTransitions. */
export function describeTransitions(use: UseBackend): void {
  describeTransition(use);
  describeListTransitions(use);
}

/** `transition`. */
function describeTransition(use: UseBackend): void {
  describe("transition", () => {
    transitionNumbers(use);
    transitionRefusals(use);
    transitionFences(use);
    transitionPatch(use);
    transitionKeeps(use);
  });
}

/** `transition`: ids without gaps, each stored as returned. */
function transitionNumbers(use: UseBackend): void {
  it("numbers transitions 1..n without gaps and stores each as returned", async () => {
    const b = use();
    const run = await newRun(b);
    const c1 = (await b.claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS })) as RunRecord;
    const returned = [
      await b.transition(move(c1, "PENDING", "RUNNING", { at: T0 + 1 })),
      await b.transition(
        move(c1, "RUNNING", "PAUSED", {
          pausedReason: "awaiting_signal",
          reason: "waits for approval signal",
          patch: { releaseLease: true },
          at: T0 + 2,
        }),
      ),
      await b.transition(
        move(c1, "PAUSED", "RESUMING", { actor: { kind: "user", id: "bob" }, fence: { unowned: true, now: T0 + 3 } }),
      ),
    ];
    expect(returned[1]?.run).toMatchObject({ state: "PAUSED", pausedReason: "awaiting_signal", leaseOwner: null });
    expect(returned[2]?.run.pausedReason).toBeNull();
    const c2 = (await b.claimRun({ workerId: "w2", now: T0 + 4, leaseMs: LEASE_MS })) as RunRecord;
    expect(c2.epoch).toBe(2);
    returned.push(await b.transition(move(c2, "RESUMING", "RUNNING", { at: T0 + 5 })));
    returned.push(await b.transition(move(c2, "RUNNING", "COMPLETED", { at: T0 + 6, patch: { output: "done" } })));

    const stored = await b.listTransitions(run.id);
    expect(stored.map((t) => t.id)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(stored.map((t) => [t.from, t.to, t.pausedReason])).toEqual([
      [null, "PENDING", null],
      ["PENDING", "RUNNING", null],
      ["RUNNING", "PAUSED", "awaiting_signal"],
      ["PAUSED", "RESUMING", null],
      ["RESUMING", "RUNNING", null],
      ["RUNNING", "COMPLETED", null],
    ]);
    expect(stored.slice(1)).toStrictEqual(returned.map((r) => r.transition));
    expect(stored[2]).toStrictEqual({
      runId: run.id,
      id: 3,
      at: T0 + 2,
      actor: WORKER,
      from: "RUNNING",
      to: "PAUSED",
      pausedReason: "awaiting_signal",
      reason: "waits for approval signal",
      versions: VERSIONS,
    });
    expect(stored[3]?.actor).toEqual({ kind: "user", id: "bob" });
    const last = returned[returned.length - 1]?.run;
    expect(last).toMatchObject({ state: "COMPLETED", lastTransitionId: 6, updatedAt: T0 + 6, output: "done" });
    expect(await b.getRun(run.id)).toStrictEqual(last);
  });
}

/** `transition`: a wrong state, an illegal pair, a paused reason, a stale epoch. */
function transitionRefusals(use: UseBackend): void {
  it("refuses a transition whose from is not the stored state, naming the real state", async () => {
    const b = use();
    const run = await newRun(b);
    const before = await snapshot(b, run.id);
    const error = await refusal(b.transition(move(run, "RUNNING", "COMPLETED")));
    expect(error).toBeInstanceOf(IllegalTransitionError);
    expect(error.message).toContain("PENDING");
    expect(await snapshot(b, run.id)).toStrictEqual(before);
  });

  it("refuses an illegal pair", async () => {
    const b = use();
    const run = await newRun(b);
    const before = await snapshot(b, run.id);
    expect(await refusal(b.transition(move(run, "PENDING", "COMPLETED")))).toBeInstanceOf(IllegalTransitionError);
    const done = await runningRun(b);
    await b.transition(move(done, "RUNNING", "COMPLETED", { patch: { output: null } }));
    const error = await refusal(b.transition(move(done, "COMPLETED", "RUNNING")));
    expect(error).toBeInstanceOf(IllegalTransitionError);
    expect(await snapshot(b, run.id)).toStrictEqual(before);
    expect(await b.listTransitions(done.id)).toHaveLength(3);
  });

  it("requires a paused reason exactly for PAUSED", async () => {
    const b = use();
    const run = await runningRun(b);
    const before = await snapshot(b, run.id);
    expect(await refusal(b.transition(move(run, "RUNNING", "PAUSED")))).toBeInstanceOf(IllegalTransitionError);
    const extra = refusal(b.transition(move(run, "RUNNING", "COMPLETED", { pausedReason: "awaiting_user" })));
    expect(await extra).toBeInstanceOf(IllegalTransitionError);
    expect(await snapshot(b, run.id)).toStrictEqual(before);
  });

  it("refuses a stale epoch with LeaseLostError and stores nothing", async () => {
    const b = use();
    const run = await newRun(b);
    const first = (await b.claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS })) as RunRecord;
    const second = (await b.claimRun({ workerId: "w2", now: T0 + LEASE_MS, leaseMs: LEASE_MS })) as RunRecord;
    const before = await snapshot(b, run.id);
    const error = await refusal(b.transition(move(first, "PENDING", "RUNNING")));
    expect(error).toBeInstanceOf(LeaseLostError);
    expect(await snapshot(b, run.id)).toStrictEqual(before);
    const ok = await b.transition(move(second, "PENDING", "RUNNING"));
    expect(ok.transition.id).toBe(2);
  });
}

/** `transition`: takeovers and outside acts, fenced by the lease. */
function transitionFences(use: UseBackend): void {
  it("takes a run over from a lapsed lease: bumps the epoch, clears the lease, fences the old owner", async () => {
    const b = use();
    const run = await runningRun(b, { workerId: "w1" });
    const { run: taken, transition } = await b.transition(
      move(run, "RUNNING", "INTERRUPTED", {
        actor: SYSTEM,
        fence: { takeover: { epoch: run.epoch, leaseExpiresAt: run.leaseExpiresAt } },
      }),
    );
    expect(taken).toMatchObject({
      state: "INTERRUPTED",
      epoch: run.epoch + 1,
      leaseOwner: null,
      leaseExpiresAt: null,
    });
    expect(transition).toMatchObject({ id: 3, from: "RUNNING", to: "INTERRUPTED", actor: SYSTEM });
    expect(await b.getRun(run.id)).toStrictEqual(taken);
    const before = await snapshot(b, run.id);
    expect(await refusal(b.transition(move(run, "INTERRUPTED", "RESUMING")))).toBeInstanceOf(LeaseLostError);
    expect(
      await refusal(b.saveSteps([fullStep(run.id, 1, run.epoch)], { epoch: run.epoch, sync: true })),
    ).toBeInstanceOf(LeaseLostError);
    expect(await snapshot(b, run.id)).toStrictEqual(before);
    expect(await b.loadSteps(run.id)).toEqual([]);
  });

  it("refuses a takeover when the lease was renewed or the epoch moved since it was seen", async () => {
    const b = use();
    const run = await runningRun(b, { workerId: "w1" });
    const seen = { epoch: run.epoch, leaseExpiresAt: run.leaseExpiresAt };
    await b.renewLeases({
      workerId: "w1",
      now: T0 + 1_000,
      leaseMs: LEASE_MS,
      runs: [{ runId: run.id, epoch: run.epoch }],
    });
    const before = await snapshot(b, run.id);
    const renewed = refusal(b.transition(move(run, "RUNNING", "INTERRUPTED", { fence: { takeover: seen } })));
    expect(await renewed).toBeInstanceOf(LeaseLostError);
    const current = before.run as RunRecord;
    const oldEpoch = { epoch: run.epoch - 1, leaseExpiresAt: current.leaseExpiresAt };
    const stale = refusal(b.transition(move(run, "RUNNING", "INTERRUPTED", { fence: { takeover: oldEpoch } })));
    expect(await stale).toBeInstanceOf(LeaseLostError);
    expect(await snapshot(b, run.id)).toStrictEqual(before);
    expect(before.run).toMatchObject({ leaseOwner: "w1", leaseExpiresAt: T0 + 1_000 + LEASE_MS, epoch: run.epoch });
  });

  it("refuses an unowned write while a live lease exists, allows it once the lease lapsed", async () => {
    const b = use();
    const run = await newRun(b);
    await b.claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS });
    const before = await snapshot(b, run.id);
    const cancel = (now: number) =>
      b.transition(
        move(run, "PENDING", "CANCELLED", { actor: { kind: "user", id: "op" }, fence: { unowned: true, now } }),
      );
    expect(await refusal(cancel(T0 + LEASE_MS - 1))).toBeInstanceOf(LeaseLostError);
    expect(await snapshot(b, run.id)).toStrictEqual(before);
    const { run: cancelled } = await cancel(T0 + LEASE_MS);
    expect(cancelled.state).toBe("CANCELLED");
  });
}

/** `transition`: the run fields its patch changes. */
function transitionPatch(use: UseBackend): void {
  it("applies the patch: output, error, releaseLease, countRecovery, resetRecoveries", async () => {
    const b = use();
    const run = await runningRun(b, { workerId: "w1" });
    const divergence: SerializedError = {
      name: "ReplayDivergenceError",
      message: "step 2 was fetch_data, now summarize",
      code: "REPLAY_DIVERGENCE",
      retryable: false,
      data: { seq: 2 },
    };
    const failed = await b.transition(
      move(run, "RUNNING", "FAILED", { patch: { error: divergence, releaseLease: true } }),
    );
    expect(failed.run).toMatchObject({ error: divergence, leaseOwner: null, leaseExpiresAt: null, epoch: run.epoch });
    expect((await b.getRun(run.id))?.error).toStrictEqual(divergence);

    const resumed = await b.transition(
      move(run, "FAILED", "RESUMING", {
        fence: { unowned: true, now: T0 },
        patch: { error: null, countRecovery: true },
      }),
    );
    expect(resumed.run.error).toBeUndefined();
    expect(resumed.run.recoveries).toBe(1);
    expect(await b.getRun(run.id)).toStrictEqual(resumed.run);

    const again = (await b.claimRun({ workerId: "w2", now: T0, leaseMs: LEASE_MS, runId: run.id })) as RunRecord;
    await b.transition(move(again, "RESUMING", "RUNNING"));
    const output = { summary: "ok", figures: [1, 2.5, -3], nested: { empty: {}, none: null } };
    const done = await b.transition(move(again, "RUNNING", "COMPLETED", { patch: { output, releaseLease: true } }));
    expect(done.run).toMatchObject({ output, recoveries: 1, leaseOwner: null });
    expect(await b.getRun(run.id)).toStrictEqual(done.run);

    const counted = await runningRun(b, { workerId: "w3" });
    const lost = await b.transition(
      move(counted, "RUNNING", "INTERRUPTED", {
        fence: { takeover: { epoch: counted.epoch, leaseExpiresAt: counted.leaseExpiresAt } },
      }),
    );
    const recovered = await b.transition(
      move(lost.run, "INTERRUPTED", "RESUMING", {
        fence: { unowned: true, now: T0 },
        patch: { countRecovery: true },
      }),
    );
    expect(recovered.run.recoveries).toBe(1);
    const reclaimed = (await b.claimRun({
      workerId: "w4",
      now: T0,
      leaseMs: LEASE_MS,
      runId: counted.id,
    })) as RunRecord;
    const rerunning = await b.transition(move(reclaimed, "RESUMING", "RUNNING"));
    const handedOver = await b.transition(
      move(rerunning.run, "RUNNING", "INTERRUPTED", { patch: { releaseLease: true, resetRecoveries: true } }),
    );
    expect(handedOver.run.recoveries).toBe(0);
    expect((await b.getRun(counted.id))?.recoveries).toBe(0);

    const nullOutput = await runningRun(b);
    await b.transition(move(nullOutput, "RUNNING", "COMPLETED", { patch: { output: null } }));
    const stored = await b.getRun(nullOutput.id);
    expect(stored?.output).toBeNull();
    expect(stored?.leaseOwner).toBe("w1");
  });
}

/** `transition`: what it keeps, a FAILED run's resume, an unknown run. */
function transitionKeeps(use: UseBackend): void {
  it("keeps output and error when the patch does not name them", async () => {
    const b = use();
    const error: SerializedError = { name: "ReplayDivergenceError", message: "z", code: "REPLAY_DIVERGENCE" };
    const failed = await runningRun(b);
    await b.transition(move(failed, "RUNNING", "FAILED", { patch: { error, output: { partial: true } } }));
    const resumed = await b.transition(move(failed, "FAILED", "RESUMING", { fence: { epoch: failed.epoch } }));
    expect(resumed.run).toMatchObject({ error, output: { partial: true } });
    expect(await b.getRun(failed.id)).toStrictEqual(resumed.run);
  });

  it("resumes a FAILED run only after a replay divergence", async () => {
    const b = use();
    const resume = (r: RunRecord) =>
      b.transition(move(r, "FAILED", "RESUMING", { fence: { unowned: true, now: T0 + 10 * LEASE_MS } }));
    const toolFailed = await runningRun(b);
    await b.transition(
      move(toolFailed, "RUNNING", "FAILED", {
        patch: { error: { name: "ToolFailedError", message: "x", code: "TOOL_FAILED" } },
      }),
    );
    expect(await refusal(resume(toolFailed))).toBeInstanceOf(IllegalTransitionError);
    const noError = await runningRun(b);
    await b.transition(move(noError, "RUNNING", "FAILED"));
    expect(await refusal(resume(noError))).toBeInstanceOf(IllegalTransitionError);
    expect((await b.getRun(noError.id))?.state).toBe("FAILED");
    const diverged = await runningRun(b);
    await b.transition(
      move(diverged, "RUNNING", "FAILED", {
        patch: { error: { name: "ReplayDivergenceError", message: "y", code: "REPLAY_DIVERGENCE" } },
      }),
    );
    expect((await resume(diverged)).run.state).toBe("RESUMING");
  });

  it("refuses a transition of an unknown run", async () => {
    const error = await refusal(use().transition(move({ id: "ghost", epoch: 0 }, "PENDING", "RUNNING")));
    expect(error).toBeInstanceOf(RunNotFoundError);
  });
}

/** `listTransitions`. */
function describeListTransitions(use: UseBackend): void {
  describe("listTransitions", () => {
    it("returns an empty list for an unknown run", async () => {
      expect(await use().listTransitions("ghost")).toEqual([]);
    });
  });
}
