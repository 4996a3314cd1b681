import { describe, expect, it } from "vitest";
import { RunNotFoundError } from "../../core/errors.ts";
import {
  endRun,
  interruptRun,
  LEASE_MS,
  newRun,
  pausedRun,
  refusal,
  runningRun,
  stopOf,
  storedState,
  T0,
  USER,
  type UseBackend,
  VERSIONS,
} from "./conformance-fixtures.ts";

/** requestStop and listStopRequested. */
export function describeStops(use: UseBackend): void {
  describeRequestStop(use);
}

/** `requestStop`. */
function describeRequestStop(use: UseBackend): void {
  describe("requestStop", () => {
    requestStopCancels(use);
    requestStopSuspends(use);
  });
}

/** `requestStop` with a cancel: at once, stored for a worker, or CANCELLING. */
function requestStopCancels(use: UseBackend): void {
  it("cancels a PENDING run at once, with error code CANCELLED", async () => {
    const b = use();
    const run = await newRun(b);
    const stop = stopOf(run.id, "cancel");
    const result = await b.requestStop(stop);
    expect(result.run).toMatchObject({
      state: "CANCELLED",
      stopRequest: stop.request,
      lastTransitionId: 2,
      updatedAt: T0 + 2_000,
    });
    expect(result.run.error?.code).toBe("CANCELLED");
    expect(result.transitions).toHaveLength(1);
    expect(result.transitions[0]).toMatchObject({
      runId: run.id,
      id: 2,
      from: "PENDING",
      to: "CANCELLED",
      actor: USER,
      at: T0 + 2_000,
      pausedReason: null,
      versions: VERSIONS,
    });
    expect(await b.getRun(run.id)).toStrictEqual(result.run);
    expect((await b.listTransitions(run.id)).slice(1)).toStrictEqual(result.transitions);
    expect(await b.claimRun({ workerId: "w1", now: T0 + 3_000, leaseMs: LEASE_MS })).toBeUndefined();
  });

  it("stores the cancel of a PENDING run a worker has claimed, for that worker", async () => {
    const b = use();
    const run = await newRun(b);
    await b.claimRun({ workerId: "w3", now: T0 + 1_000, leaseMs: LEASE_MS, runId: run.id });
    const stop = stopOf(run.id, "cancel");
    const result = await b.requestStop(stop);
    expect(result.transitions).toEqual([]);
    expect(result.run).toMatchObject({ state: "PENDING", leaseOwner: "w3", stopRequest: stop.request });
    expect(await b.getRun(run.id)).toStrictEqual(result.run);
    expect(await b.listStopRequested("w3")).toEqual([run.id]);
  });

  it("moves a PAUSED run to CANCELLING, which a worker then claims", async () => {
    const b = use();
    const { run, waits } = await pausedRun(b, [{ seq: 1 }]);
    const stop = stopOf(run.id, "cancel");
    const result = await b.requestStop(stop);
    expect(result.run).toMatchObject({ state: "CANCELLING", pausedReason: null, stopRequest: stop.request });
    expect(result.transitions).toMatchObject([{ id: 4, from: "PAUSED", to: "CANCELLING", actor: USER }]);
    expect(await b.getRun(run.id)).toStrictEqual(result.run);
    // Not ended yet: its waits stay as they are until the worker finishes the cancellation.
    expect(await b.loadWaits(run.id)).toStrictEqual(waits);
    const claimed = await b.claimRun({ workerId: "w2", now: T0 + 3_000, leaseMs: LEASE_MS });
    expect(claimed).toMatchObject({ id: run.id, state: "CANCELLING", leaseOwner: "w2", epoch: run.epoch + 1 });
  });

  it("stores the request for the worker that holds a RUNNING run", async () => {
    const b = use();
    const run = await runningRun(b, { workerId: "w1" });
    await runningRun(b, { workerId: "w1" });
    await runningRun(b, { workerId: "w2" });
    const stop = stopOf(run.id, "cancel");
    const result = await b.requestStop(stop);
    expect(result.transitions).toEqual([]);
    expect(result.run).toStrictEqual({ ...run, stopRequest: stop.request });
    expect(await b.getRun(run.id)).toStrictEqual(result.run);
    expect(await b.listStopRequested("w1")).toEqual([run.id]);
    expect(await b.listStopRequested("w2")).toEqual([]);
    expect(await b.listStopRequested("nobody")).toEqual([]);
  });
}

/** `requestStop`: suspends, which request wins, ended, INTERRUPTED and unknown runs. */
function requestStopSuspends(use: UseBackend): void {
  it("moves a PAUSED run to RESUMING for a suspend, to be suspended by a worker", async () => {
    const b = use();
    const { run } = await pausedRun(b, [{ seq: 1 }]);
    const stop = stopOf(run.id, "suspend");
    const result = await b.requestStop(stop);
    expect(result.run).toMatchObject({ state: "RESUMING", stopRequest: stop.request });
    expect(result.transitions).toMatchObject([{ from: "PAUSED", to: "RESUMING", actor: USER, at: T0 + 2_000 }]);
    expect(await b.getRun(run.id)).toStrictEqual(result.run);
  });

  it("never lets a suspend override a cancel; a cancel overrides a suspend", async () => {
    const b = use();
    const cancelled = await runningRun(b);
    const cancel = stopOf(cancelled.id, "cancel", { at: T0 + 100 });
    await b.requestStop(cancel);
    const ignored = await b.requestStop(stopOf(cancelled.id, "suspend", { at: T0 + 200 }));
    expect(ignored.run.stopRequest).toStrictEqual(cancel.request);
    expect((await b.getRun(cancelled.id))?.stopRequest).toStrictEqual(cancel.request);

    const { run: paused } = await pausedRun(b, [{ seq: 1 }]);
    await b.requestStop(stopOf(paused.id, "cancel"));
    const before = await storedState(b, paused.id);
    const late = await b.requestStop(stopOf(paused.id, "suspend", { at: T0 + 3_000 }));
    expect(late.transitions).toEqual([]);
    expect(await storedState(b, paused.id)).toStrictEqual(before);
    expect(before.run?.state).toBe("CANCELLING");

    const suspended = await runningRun(b);
    await b.requestStop(stopOf(suspended.id, "suspend", { at: T0 + 100 }));
    const override = stopOf(suspended.id, "cancel", { at: T0 + 200 });
    await b.requestStop(override);
    expect((await b.getRun(suspended.id))?.stopRequest).toStrictEqual(override.request);
  });

  it("returns a run that has ended untouched", async () => {
    const b = use();
    const run = await runningRun(b);
    await endRun(b, run);
    const before = await storedState(b, run.id);
    const result = await b.requestStop(stopOf(run.id, "cancel"));
    expect(result).toStrictEqual({ run: before.run, transitions: [] });
    expect(await storedState(b, run.id)).toStrictEqual(before);
  });

  it("moves an INTERRUPTED run to CANCELLING", async () => {
    const b = use();
    const run = await interruptRun(b, await runningRun(b));
    const stop = stopOf(run.id, "cancel");
    const result = await b.requestStop(stop);
    expect(result.run).toMatchObject({ state: "CANCELLING", stopRequest: stop.request });
    expect(result.transitions).toMatchObject([{ from: "INTERRUPTED", to: "CANCELLING" }]);
    const claimed = await b.claimRun({ workerId: "w2", now: T0 + 3_000, leaseMs: LEASE_MS, runId: run.id });
    expect(claimed).toMatchObject({ state: "CANCELLING", leaseOwner: "w2" });
  });

  it("refuses an unknown run with RunNotFoundError", async () => {
    expect(await refusal(use().requestStop(stopOf("ghost", "cancel")))).toBeInstanceOf(RunNotFoundError);
  });
}
