import { describe, expect, it } from "vitest";
import { AlreadyDecidedError, RunNotCompletedError, RunNotFoundError } from "../../core/errors.ts";
import type { AcceptanceRecord, RunRecord } from "../../core/records.ts";
import {
  endRun,
  LEASE_MS,
  move,
  newRun,
  refusal,
  runningRun,
  runUsage,
  storedState,
  suspendRequest,
  T0,
  USER,
  type UseBackend,
  waitRecord,
} from "./conformance-fixtures.ts";

const ACCEPTED: AcceptanceRecord = { decision: "accepted", by: USER, note: "numbers check out", at: T0 + 5_000 };

/** A run's usage (`patch.usage`), a child's usage in its parent's wait, and `recordAcceptance`. */
export function describeUsage(use: UseBackend): void {
  describeRunUsage(use);
  describeRecordAcceptance(use);
}

/** `run usage`. */
function describeRunUsage(use: UseBackend): void {
  describe("run usage", () => {
    it("is undefined for a new run, set by a transition's patch and kept by later ones", async () => {
      const b = use();
      const run = await newRun(b);
      expect(run.usage).toBeUndefined();
      expect((await b.getRun(run.id))?.usage).toBeUndefined();
      const claimed = (await b.claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS, runId: run.id })) as RunRecord;
      const first = runUsage(1);
      const { run: running } = await b.transition(move(claimed, "PENDING", "RUNNING", { patch: { usage: first } }));
      expect(running.usage).toStrictEqual(first);
      expect((await b.getRun(run.id))?.usage).toStrictEqual(first);
      // Without usage in its patch, a transition leaves the stored usage as it is.
      const { run: paused } = await b.transition(
        move(running, "RUNNING", "PAUSED", { pausedReason: "awaiting_signal", patch: { releaseLease: true } }),
      );
      expect(paused.usage).toStrictEqual(first);
      expect((await b.getRun(run.id))?.usage).toStrictEqual(first);
    });

    it("is written with the transition that ends the run", async () => {
      const b = use();
      const run = await runningRun(b);
      const usage = runUsage(3);
      const { run: ended } = await endRun(b, run, "FAILED", { patch: { usage, releaseLease: true } });
      expect(ended).toMatchObject({ state: "FAILED", usage });
      expect(await b.getRun(run.id)).toStrictEqual(ended);
    });

    it("goes to the parent's child wait with how the child ended, from the ending transition", async () => {
      const b = use();
      const parent = await runningRun(b);
      const child = await runningRun(b, { workerId: "w2", overrides: { parentRunId: parent.id } });
      const wait = waitRecord(parent.id, 1, { kind: "child", name: child.id, details: { childRunId: child.id } });
      expect((await b.suspend(suspendRequest(parent, [wait], { pausedReason: "awaiting_child" }))).paused).toBe(true);
      const usage = runUsage(2);
      await b.transition(
        move(child, "RUNNING", "COMPLETED", { at: T0 + 1_000, patch: { output: { n: 1 }, usage, releaseLease: true } }),
      );
      const [resolved] = await b.loadWaits(parent.id);
      expect(resolved?.resolution).toStrictEqual({
        outcome: "child_ended",
        value: { runId: child.id, state: "COMPLETED", output: { n: 1 }, error: null, continuedTo: null, usage },
        at: T0 + 1_000,
      });
    });

    it("goes to a child wait opened after the child ended, from the stored run", async () => {
      const b = use();
      const parent = await runningRun(b);
      const child = await runningRun(b, { workerId: "w2", overrides: { parentRunId: parent.id } });
      const usage = runUsage(5);
      await endRun(b, child, "COMPLETED", { patch: { output: { n: 2 }, usage, releaseLease: true } });
      const wait = waitRecord(parent.id, 1, { kind: "child", name: child.id, details: { childRunId: child.id } });
      const result = await b.suspend(suspendRequest(parent, [wait], { pausedReason: "awaiting_child" }));
      expect(result.paused).toBe(false);
      const [resolved] = await b.loadWaits(parent.id);
      expect(resolved?.resolution?.value).toStrictEqual({
        runId: child.id,
        state: "COMPLETED",
        output: { n: 2 },
        error: null,
        continuedTo: null,
        usage,
      });
    });
  });
}

/** `recordAcceptance`. */
function describeRecordAcceptance(use: UseBackend): void {
  describe("recordAcceptance", () => {
    it("stores the verdict on a COMPLETED run without a transition or a change of state", async () => {
      const b = use();
      const { run: done } = await endRun(b, await runningRun(b));
      const before = await storedState(b, done.id);
      const accepted = await b.recordAcceptance(done.id, ACCEPTED);
      expect(accepted).toStrictEqual({ ...done, acceptance: ACCEPTED });
      expect(await storedState(b, done.id)).toStrictEqual({ ...before, run: accepted });
      expect(await b.listTransitions(done.id)).toStrictEqual(before.transitions);

      const { run: other } = await endRun(b, await runningRun(b));
      const rejected: AcceptanceRecord = { decision: "rejected", by: USER, note: "", at: T0 + 6_000 };
      expect((await b.recordAcceptance(other.id, rejected)).acceptance).toStrictEqual(rejected);
      expect((await b.getRun(other.id))?.acceptance).toStrictEqual(rejected);
    });

    it("refuses a run that is not COMPLETED, naming its state", async () => {
      const b = use();
      const running = await runningRun(b);
      const { run: failed } = await endRun(b, await runningRun(b), "FAILED");
      for (const run of [await newRun(b), running, failed]) {
        const before = await storedState(b, run.id);
        const error = await refusal(b.recordAcceptance(run.id, ACCEPTED));
        expect(error).toBeInstanceOf(RunNotCompletedError);
        expect(error.message).toContain(before.run?.state as string);
        expect(error.message).toContain("COMPLETED");
        expect(await storedState(b, run.id)).toStrictEqual(before);
      }
    });

    it("refuses a second verdict, saying who gave the first and what it was", async () => {
      const b = use();
      const { run } = await endRun(b, await runningRun(b));
      await b.recordAcceptance(run.id, ACCEPTED);
      const before = await storedState(b, run.id);
      const second: AcceptanceRecord = {
        decision: "rejected",
        by: { kind: "user", id: "bob" },
        note: "",
        at: T0 + 7_000,
      };
      const error = await refusal(b.recordAcceptance(run.id, second));
      expect(error).toBeInstanceOf(AlreadyDecidedError);
      expect(error.message).toContain("accepted");
      expect(error.message).toContain(USER.id);
      expect(await storedState(b, run.id)).toStrictEqual(before);
      expect(before.run?.acceptance).toStrictEqual(ACCEPTED);
    });

    it("refuses an unknown run with RunNotFoundError", async () => {
      expect(await refusal(use().recordAcceptance("ghost", ACCEPTED))).toBeInstanceOf(RunNotFoundError);
      expect(await use().getRun("ghost")).toBeUndefined();
    });
  });
}
