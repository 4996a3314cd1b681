import { describe, expect, it } from "vitest";
import {
  addRunUsage,
  BUDGET_KEYS,
  type Budget,
  BudgetMeter,
  capBudget,
  EMPTY_USAGE,
  mergeBudgets,
  usageOfSteps,
  validateBudget,
} from "./budget.ts";
import { BudgetExceededError, InvalidInputError } from "./errors.ts";
import type { Json, RunUsage, StepKind, StepRecord, Usage } from "./records.ts";

function usage(over: Partial<RunUsage> = {}): RunUsage {
  return { ...EMPTY_USAGE, ...over };
}

let seq = 0;
function step(kind: StepKind, name: string, extra: { usage?: Usage; result?: Json } = {}): StepRecord {
  seq += 1;
  return {
    runId: "r1",
    seq,
    kind,
    name,
    status: "completed",
    argsDigest: "d",
    args: null,
    result: extra.result,
    error: undefined,
    attempts: [],
    heartbeat: undefined,
    usage: extra.usage,
    startedAt: 0,
    endedAt: 1,
    epoch: 1,
  };
}

describe("validateBudget", () => {
  it("returns a clean copy of a good budget", () => {
    const input = {
      tokens: 1000,
      costUsd: 0.5,
      modelCalls: 3,
      toolCalls: 0,
      steps: 10,
      wallTimeMs: 60_000,
      extraUndefined: undefined,
    };
    const { extraUndefined: _, ...good } = input;
    const out = validateBudget(good, "run options.budget");
    expect(out).toEqual(good);
    expect(out).not.toBe(good);
    expect(validateBudget({}, "x")).toEqual({});
  });

  it("drops keys set to undefined", () => {
    const out = validateBudget({ tokens: undefined, steps: 3 }, "x");
    expect(out).toEqual({ steps: 3 });
    expect("tokens" in out).toBe(false);
  });

  it("names an unknown key and lists the known ones", () => {
    const fn = () => validateBudget({ tokenz: 5 }, 'run("ops", "clean") options.budget');
    expect(fn).toThrow(InvalidInputError);
    expect(fn).toThrow(
      'run("ops", "clean") options.budget: unknown budget key "tokenz" (known: tokens, costUsd, modelCalls, toolCalls, steps, wallTimeMs)',
    );
  });

  it.each([
    ["tokens", -1, 'budget "tokens" must be >= 0 (got -1)'],
    ["costUsd", Number.NaN, 'budget "costUsd" must be a finite number (got NaN)'],
    ["steps", Number.POSITIVE_INFINITY, 'budget "steps" must be a finite number (got Infinity)'],
    ["toolCalls", "5", 'budget "toolCalls" must be a number (got the string "5")'],
    ["wallTimeMs", null, 'budget "wallTimeMs" must be a number (got null)'],
    ["modelCalls", true, 'budget "modelCalls" must be a number (got boolean true)'],
  ])("refuses %s = %s", (key, value, message) => {
    try {
      validateBudget({ [key]: value }, "where");
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidInputError);
      expect((error as Error).message).toContain(`where: ${message}`);
      expect((error as InvalidInputError).issues).toEqual([{ path: [key], message: expect.any(String) }]);
    }
  });

  it("reports every bad key at once", () => {
    try {
      validateBudget({ tokens: -1, nope: 1, steps: 2 }, "w");
      expect.unreachable();
    } catch (error) {
      expect((error as InvalidInputError).issues.map((i) => i.path[0])).toEqual(["tokens", "nope"]);
    }
  });

  it("refuses a budget that is not an object", () => {
    expect(() => validateBudget(5, "w")).toThrow(/w: a budget is an object with any of tokens, costUsd/);
    expect(() => validateBudget(null, "w")).toThrow(/\(got null\)/);
    expect(() => validateBudget([], "w")).toThrow(/\(got an array\)/);
  });

  it("accepts 0 limits", () => {
    expect(validateBudget({ tokens: 0, costUsd: 0 }, "w")).toEqual({ tokens: 0, costUsd: 0 });
  });
});

describe("mergeBudgets / capBudget", () => {
  it("lets later budgets override per key and skips undefined", () => {
    expect(mergeBudgets({ tokens: 10, steps: 5 }, undefined, { steps: 7 }, { costUsd: 1 })).toEqual({
      tokens: 10,
      steps: 7,
      costUsd: 1,
    });
    expect(mergeBudgets()).toEqual({});
    expect(mergeBudgets({ tokens: 1 }, { tokens: undefined } as unknown as Budget)).toEqual({ tokens: 1 });
  });

  it("gives a child at most what its parent has left, keeping keys only one side has", () => {
    expect(
      capBudget({ tokens: 500, steps: 100, toolCalls: 3 }, { tokens: 200, steps: 1000, costUsd: 0.25, wallTimeMs: 9 }),
    ).toEqual({ tokens: 200, steps: 100, toolCalls: 3, costUsd: 0.25, wallTimeMs: 9 });
    expect(capBudget({}, { modelCalls: 2 })).toEqual({ modelCalls: 2 });
    expect(capBudget({ modelCalls: 2 }, {})).toEqual({ modelCalls: 2 });
    expect(capBudget({ steps: 5 }, { steps: 0 })).toEqual({ steps: 0 });
  });
});

describe("usage sums", () => {
  it("EMPTY_USAGE is all zero and frozen", () => {
    expect(EMPTY_USAGE).toEqual({ inputTokens: 0, outputTokens: 0, modelCalls: 0, costUsd: 0, toolCalls: 0, steps: 0 });
    expect(Object.isFrozen(EMPTY_USAGE)).toBe(true);
  });

  it("addRunUsage adds every field and rounds cost", () => {
    const a = usage({ inputTokens: 1, outputTokens: 2, modelCalls: 3, costUsd: 0.1, toolCalls: 4, steps: 5 });
    const b = usage({ inputTokens: 10, outputTokens: 20, modelCalls: 30, costUsd: 0.2, toolCalls: 40, steps: 50 });
    expect(addRunUsage(a, b)).toEqual({
      inputTokens: 11,
      outputTokens: 22,
      modelCalls: 33,
      costUsd: 0.3,
      toolCalls: 44,
      steps: 55,
    });
    expect(addRunUsage(a, { steps: 1 })).toEqual({ ...a, steps: 6 });
  });

  it("usageOfSteps sums model usage, counts tool steps and all steps", () => {
    const steps = [
      step("tool", "fetch", { usage: { inputTokens: 100, outputTokens: 10, modelCalls: 1, costUsd: 0.001 } }),
      step("llm", "gpt-4o", { usage: { inputTokens: 50, outputTokens: 5, modelCalls: 1 } }),
      step("value", "now"),
      step("tool", "write"),
      step("domain", "finance.quarterly"),
    ];
    expect(usageOfSteps(steps)).toEqual({
      inputTokens: 150,
      outputTokens: 15,
      modelCalls: 2,
      costUsd: 0.001,
      toolCalls: 2,
      steps: 5,
    });
    expect(usageOfSteps([])).toEqual(EMPTY_USAGE);
  });

  it("usageOfSteps rolls up children's usage from result: wait steps", () => {
    const child = { inputTokens: 7, outputTokens: 3, modelCalls: 2, costUsd: 0.02, toolCalls: 4, steps: 9 };
    const steps = [
      step("child", "ops.purge"),
      step("wait", "result:c1", { result: { state: "COMPLETED", usage: child } }),
      // the wait's resolution shape: the child's ending sits under `value`
      step("wait", "result:c2", {
        result: { outcome: "child_ended", value: { state: "FAILED", usage: child }, at: 1 },
      }),
      // not a child result: ignored even with a usage
      step("wait", "approval", { result: { usage: child } }),
      // a child result without usage, or with junk, adds only the step itself
      step("wait", "result:c3", { result: { state: "COMPLETED" } }),
      step("wait", "result:c4", { result: { usage: { inputTokens: "x", steps: null } } }),
      step("wait", "result:c5", { result: null }),
      step("wait", "result:c6", { result: { usage: { steps: 2 } } }),
    ];
    expect(usageOfSteps(steps)).toEqual({
      inputTokens: 14,
      outputTokens: 6,
      modelCalls: 4,
      costUsd: 0.04,
      toolCalls: 8,
      steps: 8 + 18 + 2,
    });
  });
});

describe("BudgetMeter", () => {
  const T0 = 1_000_000;

  function meter(budget: Budget, used: Partial<RunUsage> = {}, runId?: string): BudgetMeter {
    return new BudgetMeter(budget, T0, usage(used), runId === undefined ? {} : { runId });
  }

  it("never refuses without limits", () => {
    const m = meter({}, { steps: 1e6, toolCalls: 1e6, modelCalls: 1e6, inputTokens: 1e9, costUsd: 1e6 });
    for (const kind of ["tool", "llm", "wait", "value", "domain", "child", "marker"] as const) {
      expect(m.check({ kind, now: T0 + 1e12, maxCostUsd: 1e6 })).toBeUndefined();
    }
    expect(m.overrun()).toBeUndefined();
    expect(m.remaining(T0 + 5)).toEqual({});
  });

  describe("steps", () => {
    it("allows the step that reaches the limit and refuses the one past it, of any kind", () => {
      expect(meter({ steps: 5 }, { steps: 4 }).check({ kind: "value", now: T0 })).toBeUndefined();
      const error = meter({ steps: 5 }, { steps: 5 }).check({ kind: "marker", now: T0 });
      expect(error).toBeInstanceOf(BudgetExceededError);
      expect(error).toMatchObject({ code: "BUDGET_EXCEEDED", budget: "steps", figure: 6, limit: 5 });
      expect(error?.message).toBe('budget "steps" of run exceeded: this step would be number 6, the limit is 5');
    });

    it("refuses every step with a limit of 0", () => {
      expect(meter({ steps: 0 }).check({ kind: "value", now: T0 })).toMatchObject({ figure: 1, limit: 0 });
    });
  });

  describe("toolCalls", () => {
    it("counts tool steps only", () => {
      expect(meter({ toolCalls: 5 }, { toolCalls: 4 }).check({ kind: "tool", now: T0 })).toBeUndefined();
      const error = meter({ toolCalls: 5 }, { toolCalls: 5 }).check({ kind: "tool", now: T0 });
      expect(error).toMatchObject({ budget: "toolCalls", figure: 6, limit: 5 });
      expect(error?.message).toBe('budget "toolCalls" of run exceeded: this call would be number 6, the limit is 5');
      expect(meter({ toolCalls: 5 }, { toolCalls: 5 }).check({ kind: "llm", now: T0 })).toBeUndefined();
    });

    it("names the run when it knows it", () => {
      const error = meter({ toolCalls: 0 }, {}, "r42").check({ kind: "tool", now: T0 });
      expect(error?.message).toBe(
        'budget "toolCalls" of run r42 exceeded: this call would be number 1, the limit is 0',
      );
    });
  });

  describe("modelCalls", () => {
    it("counts llm steps only", () => {
      expect(meter({ modelCalls: 3 }, { modelCalls: 2 }).check({ kind: "llm", now: T0 })).toBeUndefined();
      const error = meter({ modelCalls: 3 }, { modelCalls: 3 }).check({ kind: "llm", now: T0 });
      expect(error).toMatchObject({ budget: "modelCalls", figure: 4, limit: 3 });
      expect(error?.message).toBe(
        'budget "modelCalls" of run exceeded: this model call would be number 4, the limit is 3',
      );
      expect(meter({ modelCalls: 3 }, { modelCalls: 3 }).check({ kind: "tool", now: T0 })).toBeUndefined();
    });
  });

  describe("tokens", () => {
    it("allows llm and tool steps below the limit and refuses them at it (input + output)", () => {
      const below = meter({ tokens: 1000 }, { inputTokens: 600, outputTokens: 399 });
      expect(below.check({ kind: "llm", now: T0 })).toBeUndefined();
      expect(below.check({ kind: "tool", now: T0 })).toBeUndefined();
      const at = meter({ tokens: 1000 }, { inputTokens: 600, outputTokens: 400 });
      const error = at.check({ kind: "llm", now: T0 });
      expect(error).toMatchObject({ budget: "tokens", figure: 1000, limit: 1000 });
      expect(error?.message).toBe(
        'budget "tokens" of run exceeded: 1000 tokens used so far, the limit is 1000: none are left for this llm call',
      );
      expect(at.check({ kind: "tool", now: T0 })).toMatchObject({ budget: "tokens" });
    });

    it("does not stop steps that spend no tokens", () => {
      const over = meter({ tokens: 1000 }, { inputTokens: 2000 });
      for (const kind of ["wait", "value", "marker", "domain", "child"] as const) {
        expect(over.check({ kind, now: T0 })).toBeUndefined();
      }
    });
  });

  describe("costUsd", () => {
    it("refuses an llm call whose maximum output would pass the limit", () => {
      const m = meter({ costUsd: 0.015 }, { costUsd: 0.0123 });
      const error = m.check({ kind: "llm", now: T0, maxCostUsd: 0.004 });
      expect(error).toMatchObject({ budget: "costUsd", figure: 0.0163, limit: 0.015 });
      expect(error?.message).toBe(
        'budget "costUsd" of run exceeded: cost so far $0.0123 + at most $0.004 for this call\'s maximum output would pass the limit $0.015',
      );
    });

    it("allows an llm call whose maximum output reaches the limit exactly", () => {
      expect(
        meter({ costUsd: 0.3 }, { costUsd: 0.1 }).check({ kind: "llm", now: T0, maxCostUsd: 0.2 }),
      ).toBeUndefined();
      expect(meter({ costUsd: 0.3 }, { costUsd: 0.1 }).check({ kind: "llm", now: T0 })).toBeUndefined();
    });

    it("refuses llm and tool steps once the cost reaches the limit", () => {
      const at = meter({ costUsd: 0.5 }, { costUsd: 0.5 });
      const error = at.check({ kind: "tool", now: T0 });
      expect(error).toMatchObject({ budget: "costUsd", figure: 0.5, limit: 0.5 });
      expect(error?.message).toBe(
        'budget "costUsd" of run exceeded: cost so far $0.5 has reached the limit $0.5: nothing is left for this tool call',
      );
      expect(at.check({ kind: "llm", now: T0 })).toMatchObject({ budget: "costUsd" });
      expect(meter({ costUsd: 0.5 }, { costUsd: 0.499999999 }).check({ kind: "tool", now: T0 })).toBeUndefined();
      expect(at.check({ kind: "value", now: T0 })).toBeUndefined();
    });

    it("ignores maxCostUsd on a tool step", () => {
      expect(meter({ costUsd: 1 }).check({ kind: "tool", now: T0, maxCostUsd: 5 })).toBeUndefined();
    });
  });

  describe("wallTimeMs", () => {
    it("allows a step exactly at the limit and refuses one past it, of any kind", () => {
      const m = meter({ wallTimeMs: 60_000 });
      expect(m.check({ kind: "wait", now: T0 + 60_000 })).toBeUndefined();
      const error = m.check({ kind: "wait", now: T0 + 60_001 });
      expect(error).toMatchObject({ budget: "wallTimeMs", figure: 60_001, limit: 60_000 });
      expect(error?.message).toBe(
        'budget "wallTimeMs" of run exceeded: the run has been going 60001 ms, the limit is 60000 ms',
      );
    });
  });

  it("settles usage with add and checks against the new figures", () => {
    const m = meter({ toolCalls: 2, steps: 3 });
    m.add({ toolCalls: 1, steps: 1 });
    m.add({ toolCalls: 1, steps: 1, inputTokens: 5 });
    expect(m.used).toEqual(usage({ toolCalls: 2, steps: 2, inputTokens: 5 }));
    expect(m.check({ kind: "tool", now: T0 })).toMatchObject({ budget: "toolCalls", figure: 3 });
    expect(m.check({ kind: "value", now: T0 })).toBeUndefined();
    m.add({ steps: 1 });
    expect(m.check({ kind: "value", now: T0 })).toMatchObject({ budget: "steps", figure: 4 });
  });

  it("hands out copies of used and keeps its own budget", () => {
    const budget: Budget = { steps: 1 };
    const m = new BudgetMeter(budget, T0, usage());
    m.used.steps = 99;
    budget.steps = 100;
    expect(m.used.steps).toBe(0);
    expect(m.budget).toEqual({ steps: 1 });
  });

  it("reports an overrun once a figure is past its limit", () => {
    expect(meter({ tokens: 10 }, { inputTokens: 10 }).overrun()).toBeUndefined();
    expect(meter({ tokens: 10 }, { inputTokens: 8, outputTokens: 3 }).overrun()).toMatchObject({
      budget: "tokens",
      figure: 11,
      limit: 10,
    });
    expect(meter({ costUsd: 0.1 }, { costUsd: 0.2 }).overrun()).toMatchObject({ budget: "costUsd", figure: 0.2 });
    expect(meter({ steps: 1 }, { steps: 2 }).overrun()).toMatchObject({ budget: "steps", figure: 2 });
  });

  it("gives what is left per limited key, never below 0", () => {
    const m = meter(
      { tokens: 1000, costUsd: 0.3, modelCalls: 5, toolCalls: 2, steps: 10, wallTimeMs: 60_000 },
      { inputTokens: 400, outputTokens: 100, costUsd: 0.1, modelCalls: 1, toolCalls: 3, steps: 4 },
    );
    expect(m.remaining(T0 + 15_000)).toEqual({
      tokens: 500,
      costUsd: 0.2,
      modelCalls: 4,
      toolCalls: 0,
      steps: 6,
      wallTimeMs: 45_000,
    });
    expect(m.remaining(T0 + 90_000).wallTimeMs).toBe(0);
    expect(meter({ steps: 3 }).remaining(T0)).toEqual({ steps: 3 });
  });

  it("caps a child's budget by what is left", () => {
    const parent = meter({ tokens: 1000, steps: 10 }, { inputTokens: 900, steps: 2 });
    expect(capBudget({ tokens: 500, costUsd: 1 }, parent.remaining(T0))).toEqual({ tokens: 100, steps: 8, costUsd: 1 });
  });

  it("checks the keys in a fixed order: wall time, steps, tool calls, model calls, tokens, cost", () => {
    expect(BUDGET_KEYS).toEqual(["tokens", "costUsd", "modelCalls", "toolCalls", "steps", "wallTimeMs"]);
    const all = { tokens: 0, costUsd: 0, toolCalls: 0, steps: 0, wallTimeMs: 0 };
    expect(meter(all).check({ kind: "tool", now: T0 + 1 })?.budget).toBe("wallTimeMs");
    expect(meter(all).check({ kind: "tool", now: T0 })?.budget).toBe("steps");
    expect(meter({ ...all, steps: 1 }).check({ kind: "tool", now: T0 })?.budget).toBe("toolCalls");
    expect(meter({ ...all, steps: 1, toolCalls: 1 }).check({ kind: "tool", now: T0 })?.budget).toBe("tokens");
    expect(meter({ ...all, steps: 1, toolCalls: 1, tokens: 1 }).check({ kind: "tool", now: T0 })?.budget).toBe(
      "costUsd",
    );
  });
});
