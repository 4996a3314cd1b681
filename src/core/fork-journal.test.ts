import { describe, expect, it } from "vitest";
import { InvalidInputError } from "./errors.ts";
import { forkJournal, rerunPoint } from "./fork-journal.ts";
import type { EffectRecord, RunRecord, StepRecord } from "./records.ts";

const source = { id: "src" } as RunRecord;

function step(seq: number, overrides: Partial<StepRecord> = {}): StepRecord {
  return {
    runId: "src",
    seq,
    kind: "tool",
    name: `t${seq}`,
    status: "completed",
    argsDigest: "",
    args: {},
    result: { seq },
    error: undefined,
    attempts: [{ attempt: 1, startedAt: 1, endedAt: 2 }],
    heartbeat: undefined,
    usage: undefined,
    startedAt: 1,
    endedAt: 2,
    epoch: 3,
    ...overrides,
  };
}

function effect(status: EffectRecord["status"], compensates?: number): EffectRecord {
  return {
    id: "e2",
    namespace: "a/pay",
    idempotencyKey: "a/pay:src:2",
    status,
    intentAt: 1,
    receipt: status === "applied" ? { ok: true } : undefined,
    settledBy: undefined,
    settledAt: undefined,
    unknown: undefined,
    reconciliation: undefined,
    compensate: null,
    compensates,
  };
}

const refusal = (fn: () => unknown): Error => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return error as Error;
  }
  throw new Error("expected a refusal");
};

describe("forkJournal", () => {
  it("copies the steps before the fork point, stamped with the fork's id and epoch 0, effects kept", () => {
    const steps = [step(1), step(2, { effect: effect("applied") }), step(3)];
    const copied = forkJournal(source, steps, 3, "new");
    expect(copied.map((s) => [s.runId, s.seq, s.epoch])).toEqual([
      ["new", 1, 0],
      ["new", 2, 0],
    ]);
    expect(copied[1]?.effect).toEqual(effect("applied"));
    expect(steps[0]?.runId).toBe("src");
    expect(forkJournal(source, steps, 1, "new")).toEqual([]);
    expect(forkJournal(source, steps, 4, "new")).toHaveLength(3);
  });

  it("renames a child's result wait after the fork's child id", () => {
    const steps = [
      step(1, { kind: "child", name: "b.go", result: { runId: "src.1" } }),
      step(2, { kind: "wait", name: "result:src.1" }),
    ];
    const copied = forkJournal(source, steps, 3, "new");
    expect(copied.map((s) => [s.name, s.result])).toEqual([
      ["b.go", { runId: "new.1" }],
      ["result:new.1", { seq: 2 }],
    ]);
    const alone = refusal(() => forkJournal(source, steps, 2, "new"));
    expect(alone.message).toContain("step 1 spawned child src.1, whose result comes after that point");
  });

  it("refuses a step out of range, an unfinished step, an open effect and a compensation, naming the step", () => {
    const done = [step(1), step(2)];
    expect(refusal(() => forkJournal(source, done, 0, "new")).message).toContain("between 1 and 3");
    expect(refusal(() => forkJournal(source, done, 4, "new")).message).toContain("between 1 and 3");
    const started = [step(1), step(2, { status: "started" }), step(3)];
    expect(refusal(() => forkJournal(source, started, 3, "new")).message).toContain(
      'step 2 (tool "t2") of run src has not finished; fork from step 2 or earlier',
    );
    const open = [step(1), step(2, { effect: effect("unknown") })];
    expect(refusal(() => forkJournal(source, open, 3, "new")).message).toContain("cairn reconcile src e2");
    const undo = [step(1), step(2, { effect: effect("applied") }), step(3, { effect: effect("applied", 2) })];
    // A compensation is not a workflow step: it is not counted, and not copied.
    expect(refusal(() => forkJournal(source, undo, 4, "new")).message).toContain("between 1 and 3");
  });
});

describe("rerunPoint", () => {
  it("is the last failed step when nothing completed after it", () => {
    expect(rerunPoint([step(1), step(2, { status: "failed" })])).toBe(2);
    expect(rerunPoint([step(1), step(2, { status: "failed" }), step(3, { status: "started" })])).toBe(2);
  });

  it("is the step after the last when the workflow failed in its own code after a caught failure", () => {
    expect(rerunPoint([step(1, { status: "failed" }), step(2)])).toBe(3);
    expect(rerunPoint([step(1), step(2)])).toBe(3);
    expect(rerunPoint([])).toBe(1);
  });

  it("is the first unfinished step when the failed execution left one", () => {
    expect(rerunPoint([step(1), step(2, { status: "started" }), step(3)])).toBe(2);
  });
});
