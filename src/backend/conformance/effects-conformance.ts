import { describe, expect, it } from "vitest";
import { IllegalTransitionError, LeaseLostError } from "../../core/errors.ts";
import type { RunRecord, StepRecord } from "../../core/records.ts";
import type { RuntimeBackend, TransitionRequest } from "../backend.ts";
import {
  effectRecord,
  endRun,
  fullStep,
  intendedEffect,
  LEASE_MS,
  move,
  refusal,
  runningRun,
  startedStep,
  stopOf,
  storedState,
  suspendRequest,
  T0,
  USER,
  type UseBackend,
  waitRecord,
} from "./conformance-fixtures.ts";

/** The run's error while an effect's outcome is unknown. */
const UNRESOLVED = { name: "EffectUnresolvedError", code: "EFFECT_UNRESOLVED", message: "e1: outcome unknown" };

/**
 * A RUNNING run whose effect step 1 has an unknown outcome, moved to NEEDS_RECONCILIATION with its
 * lease released: what an operator reconciles. Returns the run and the stored step.
 */
export async function unresolvedRun(
  backend: RuntimeBackend,
  options: Parameters<typeof runningRun>[1] = {},
): Promise<{ run: RunRecord; step: StepRecord }> {
  const running = await runningRun(backend, options);
  const step: StepRecord = {
    ...startedStep(running.id, 1, running.epoch),
    effect: { ...intendedEffect(1), status: "unknown", unknown: "the service timed out" },
  };
  await backend.saveSteps([step], { epoch: running.epoch, sync: true });
  const { run } = await backend.transition(
    move(running, "RUNNING", "NEEDS_RECONCILIATION", { patch: { error: UNRESOLVED, releaseLease: true } }),
  );
  return { run, step };
}

/** An operator's `reconcile`: NEEDS_RECONCILIATION -> RECONCILING with the decided step, unowned. */
function reconcile(run: RunRecord, steps: readonly StepRecord[], extra: Partial<TransitionRequest> = {}) {
  return move(run, "NEEDS_RECONCILIATION", "RECONCILING", {
    actor: USER,
    fence: { unowned: true, now: T0 + 2_000 },
    at: T0 + 2_000,
    steps,
    ...extra,
  });
}

/** Effect records on steps, steps written with a transition, and RECONCILING runs. */
export function describeEffects(use: UseBackend): void {
  describeEffectRecords(use);
  describeTransitionWithSteps(use);
  describeStopOfUnresolvedRun(use);
  describeReconciling(use);
}

/** `effects`. */
function describeEffectRecords(use: UseBackend): void {
  describe("effects", () => {
    it("round-trips a step's effect record; a step without one loads without it", async () => {
      const b = use();
      const run = await runningRun(b);
      const decided: StepRecord = { ...fullStep(run.id, 1, run.epoch), effect: effectRecord(1) };
      const intended: StepRecord = { ...startedStep(run.id, 2, run.epoch), effect: intendedEffect(2) };
      const plain = fullStep(run.id, 3, run.epoch);
      const explicit: StepRecord = { ...fullStep(run.id, 4, run.epoch), effect: undefined };
      await b.saveSteps([decided, intended, plain, explicit], { epoch: run.epoch, sync: true });
      const [one, two, three, four] = await b.loadSteps(run.id);
      expect(one).toStrictEqual(decided);
      expect(two).toStrictEqual(intended);
      expect(two?.effect?.receipt).toBeUndefined();
      expect(three).toStrictEqual(plain);
      expect(four?.effect).toBeUndefined();
      expect(four).toEqual(fullStep(run.id, 4, run.epoch));
    });

    it("replaces the effect with the step: a new record, or none", async () => {
      const b = use();
      const run = await runningRun(b);
      await b.saveSteps([{ ...startedStep(run.id, 1, run.epoch), effect: intendedEffect(1) }], {
        epoch: run.epoch,
        sync: true,
      });
      const applied: StepRecord = {
        ...fullStep(run.id, 1, run.epoch),
        effect: effectRecord(1, { settledBy: "attempt" }),
      };
      await b.saveSteps([applied], { epoch: run.epoch, sync: true });
      expect(await b.loadSteps(run.id)).toStrictEqual([applied]);
      await b.saveSteps([fullStep(run.id, 1, run.epoch)], { epoch: run.epoch, sync: true });
      const [stored] = await b.loadSteps(run.id);
      expect(stored?.effect).toBeUndefined();
      expect(stored).toStrictEqual(fullStep(run.id, 1, run.epoch));
    });

    it("refuses an effect under a stale epoch and keeps the stored one", async () => {
      const b = use();
      const run = await runningRun(b);
      const kept: StepRecord = { ...startedStep(run.id, 1, run.epoch), effect: intendedEffect(1) };
      await b.saveSteps([kept], { epoch: run.epoch, sync: true });
      const stale = b.saveSteps([{ ...kept, effect: effectRecord(1) }], { epoch: run.epoch + 1, sync: true });
      expect(await refusal(stale)).toBeInstanceOf(LeaseLostError);
      expect(await b.loadSteps(run.id)).toStrictEqual([kept]);
    });
  });
}

/** `transition with steps`. */
function describeTransitionWithSteps(use: UseBackend): void {
  describe("transition with steps", () => {
    it("writes an operator's decision on the step with the transition, at the run's epoch", async () => {
      const b = use();
      const { run, step } = await unresolvedRun(b);
      const decided: StepRecord = { ...step, effect: effectRecord(1), epoch: 0 };
      const later = { ...fullStep(run.id, 2, 0), name: "note" };
      const result = await b.transition(reconcile(run, [decided, later]));
      expect(result.run).toMatchObject({ state: "RECONCILING", epoch: run.epoch, leaseOwner: null });
      expect(result.transition).toMatchObject({ from: "NEEDS_RECONCILIATION", to: "RECONCILING", actor: USER });
      expect(await b.loadSteps(run.id)).toStrictEqual([
        { ...decided, epoch: run.epoch },
        { ...later, epoch: run.epoch },
      ]);
    });

    it("stamps the steps with the epoch a takeover leaves", async () => {
      const b = use();
      const running = await runningRun(b);
      const step = { ...startedStep(running.id, 1, running.epoch), effect: intendedEffect(1) };
      const { run } = await b.transition(
        move(running, "RUNNING", "INTERRUPTED", {
          fence: { takeover: { epoch: running.epoch, leaseExpiresAt: running.leaseExpiresAt } },
          steps: [step],
        }),
      );
      expect(run.epoch).toBe(running.epoch + 1);
      expect(await b.loadSteps(run.id)).toStrictEqual([{ ...step, epoch: running.epoch + 1 }]);
    });

    it("writes none of its steps when the fence or the transition is refused", async () => {
      const b = use();
      const { run, step } = await unresolvedRun(b);
      const before = await storedState(b, run.id);
      const decided: StepRecord = { ...step, effect: effectRecord(1) };
      const extra = fullStep(run.id, 2, run.epoch);
      const refusals: [TransitionRequest, new (...args: never[]) => Error][] = [
        // A stale epoch, a takeover of a lease that moved on, a state that is not `from`, an
        // illegal pair.
        [reconcile(run, [decided, extra], { fence: { epoch: run.epoch + 1 } }), LeaseLostError],
        [
          reconcile(run, [decided, extra], { fence: { takeover: { epoch: run.epoch + 1, leaseExpiresAt: null } } }),
          LeaseLostError,
        ],
        [{ ...reconcile(run, [decided, extra]), from: "RUNNING", to: "COMPLETED" }, IllegalTransitionError],
        [{ ...reconcile(run, [decided, extra]), to: "COMPLETED" }, IllegalTransitionError],
      ];
      for (const [request, expected] of refusals) {
        expect(await refusal(b.transition(request))).toBeInstanceOf(expected);
        expect(await storedState(b, run.id)).toStrictEqual(before);
        expect(await b.loadSteps(run.id)).toStrictEqual([step]);
      }
    });

    it("refuses an outside act on a run under a live lease, and writes none of its steps", async () => {
      const b = use();
      const running = await runningRun(b, { now: T0 });
      const step = { ...startedStep(running.id, 1, running.epoch), effect: effectRecord(1) };
      const outside = move(running, "RUNNING", "CANCELLING", {
        actor: USER,
        fence: { unowned: true, now: T0 + LEASE_MS - 1 },
        steps: [step],
      });
      expect(await refusal(b.transition(outside))).toBeInstanceOf(LeaseLostError);
      expect(await b.loadSteps(running.id)).toEqual([]);
      expect((await b.getRun(running.id))?.state).toBe("RUNNING");
    });
  });
}

/** `requestStop of a NEEDS_RECONCILIATION run`. */
function describeStopOfUnresolvedRun(use: UseBackend): void {
  describe("requestStop of a NEEDS_RECONCILIATION run", () => {
    it("keeps it waiting for the operator, with the cancel stored and its error saying the cancel is pending", async () => {
      const b = use();
      const { run, step } = await unresolvedRun(b);
      const stop = stopOf(run.id, "cancel");
      const result = await b.requestStop(stop);
      // Ended now, its effect of unknown outcome could never be reconciled: the cancel waits.
      expect(result.transitions).toEqual([]);
      expect(result.run).toMatchObject({
        state: "NEEDS_RECONCILIATION",
        stopRequest: stop.request,
        lastTransitionId: run.lastTransitionId,
        leaseOwner: null,
        error: {
          ...UNRESOLVED,
          message: expect.stringContaining(stop.request.reason),
          data: { cancel: { by: stop.request.by.id, reason: stop.request.reason } },
        },
      });
      expect(await b.getRun(run.id)).toStrictEqual(result.run);
      expect(await b.loadSteps(run.id)).toStrictEqual([step]);
      expect(await b.claimRun({ workerId: "w2", now: T0 + 3_000, leaseMs: LEASE_MS })).toBeUndefined();
      // A second cancel keeps the first one's record.
      const again = await b.requestStop({ ...stop, request: { ...stop.request, reason: "again" } });
      expect(again.run.error).toStrictEqual(result.run.error);
    });

    it("keeps the parent of a cancelled child waiting while the child waits for the operator", async () => {
      const b = use();
      const parent = await runningRun(b);
      const { run: child } = await unresolvedRun(b, { overrides: { parentRunId: parent.id } });
      const wait = waitRecord(parent.id, 1, { kind: "child", name: child.id, details: { childRunId: child.id } });
      expect((await b.suspend(suspendRequest(parent, [wait], { pausedReason: "awaiting_child" }))).paused).toBe(true);
      await b.requestStop(stopOf(child.id, "cancel"));
      const [open] = await b.loadWaits(parent.id);
      expect(open).toMatchObject({ status: "open" });
      expect(await b.getRun(parent.id)).toMatchObject({ state: "PAUSED", pausedReason: "awaiting_child" });
      expect(await b.getRun(child.id)).toMatchObject({
        state: "NEEDS_RECONCILIATION",
        stopRequest: { kind: "cancel" },
      });
    });

    it("stores a suspend, or a cancel from a parent's end, for whoever takes the run on", async () => {
      const b = use();
      const { run } = await unresolvedRun(b);
      const suspend = await b.requestStop(stopOf(run.id, "suspend"));
      expect(suspend.transitions).toEqual([]);
      expect(suspend.run).toMatchObject({ state: "NEEDS_RECONCILIATION", stopRequest: { kind: "suspend" } });

      const parent = await runningRun(b);
      const policy = { parentRunId: parent.id, parentClosePolicy: "cancel" as const };
      const { run: child } = await unresolvedRun(b, { overrides: policy });
      await endRun(b, parent, "COMPLETED", { at: T0 + 4_000 });
      expect(await b.getRun(child.id)).toMatchObject({
        state: "NEEDS_RECONCILIATION",
        stopRequest: { kind: "cancel", by: { kind: "system" }, at: T0 + 4_000 },
      });
    });
  });
}

/** `RECONCILING`. */
function describeReconciling(use: UseBackend): void {
  describe("RECONCILING", () => {
    it("is claimable once an operator reconciled the run, and the worker moves it on to RUNNING", async () => {
      const b = use();
      const { run, step } = await unresolvedRun(b);
      // Waiting for an operator: no worker takes it.
      expect(await b.claimRun({ workerId: "w2", now: T0 + 1_500, leaseMs: LEASE_MS })).toBeUndefined();
      const { run: reconciling } = await b.transition(reconcile(run, [{ ...step, effect: effectRecord(1) }]));
      expect(
        await b.claimRun({ workerId: "w2", now: T0 + 3_000, leaseMs: LEASE_MS, agents: ["another_agent"] }),
      ).toBeUndefined();
      const claimed = await b.claimRun({ workerId: "w2", now: T0 + 3_000, leaseMs: LEASE_MS });
      expect(claimed).toMatchObject({
        id: run.id,
        state: "RECONCILING",
        leaseOwner: "w2",
        leaseExpiresAt: T0 + 3_000 + LEASE_MS,
        epoch: reconciling.epoch + 1,
      });
      expect(await b.claimRun({ workerId: "w3", now: T0 + 3_000, leaseMs: LEASE_MS })).toBeUndefined();
      const { run: running } = await b.transition(
        move(claimed as RunRecord, "RECONCILING", "RUNNING", { at: T0 + 3_000 }),
      );
      expect(running).toMatchObject({ state: "RUNNING", leaseOwner: "w2" });
      expect((await b.listTransitions(run.id)).map((t) => t.to).slice(-3)).toEqual([
        "NEEDS_RECONCILIATION",
        "RECONCILING",
        "RUNNING",
      ]);
    });
  });
}
