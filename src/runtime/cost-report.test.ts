import { describe, expect, it } from "vitest";
import { usageOfSteps } from "../core/budget.ts";
import type { RunRecord, RunUsage, StepRecord } from "../core/records.ts";
import { buildCostReport, costFormula, runsNeedingSteps, usd } from "./cost-report.ts";

let n = 0;
function run(patch: Partial<RunRecord> = {}): RunRecord {
  n += 1;
  return {
    id: `run_${n}`,
    agent: "reports",
    workflow: "build",
    key: null,
    state: "COMPLETED",
    pausedReason: null,
    input: null,
    output: null,
    error: undefined,
    epoch: 1,
    leaseOwner: null,
    leaseExpiresAt: null,
    recoveries: 0,
    lastTransitionId: 3,
    versions: { workflow: "1", policy: null, runtime: "0.1.0" },
    meta: {},
    parentRunId: null,
    parentClosePolicy: null,
    stopRequest: undefined,
    continuedFrom: null,
    continuedTo: null,
    usage: undefined,
    acceptance: undefined,
    createdAt: 0,
    updatedAt: 0,
    ...patch,
  };
}

function usage(costUsd: number, patch: Partial<RunUsage> = {}): RunUsage {
  return { inputTokens: 1000, outputTokens: 100, modelCalls: 1, costUsd, toolCalls: 2, steps: 3, ...patch };
}

const by = { kind: "user" as const, id: "alice" };
const accepted = { decision: "accepted" as const, by, note: "", at: 1 };
const rejected = { decision: "rejected" as const, by, note: "wrong totals", at: 1 };

function step(runId: string, seq: number, patch: Partial<StepRecord> = {}): StepRecord {
  return {
    runId,
    seq,
    kind: "tool",
    name: "t",
    status: "completed",
    argsDigest: "",
    args: undefined,
    result: undefined,
    error: undefined,
    attempts: [],
    heartbeat: undefined,
    usage: undefined,
    startedAt: 0,
    endedAt: 0,
    epoch: 1,
    ...patch,
  };
}

describe("buildCostReport", () => {
  it("divides the cost of every run, whatever its ending, by the accepted runs", () => {
    const runs = [
      run({ usage: usage(0.1), acceptance: accepted }),
      run({ usage: usage(0.2), acceptance: accepted }),
      run({ usage: usage(0.05), acceptance: rejected }),
      run({ usage: usage(0.04) }),
      run({ state: "FAILED", usage: usage(0.03) }),
      run({ state: "BLOCKED", usage: usage(0.02) }),
      run({ state: "CANCELLED", usage: usage(0.01) }),
      run({ state: "INTERRUPTED", usage: usage(0.05) }),
    ];
    const report = buildCostReport({ runs, steps: new Map() });
    const t = report.total;
    expect(t.runs).toBe(8);
    expect(t.costUsd).toBe(0.5);
    expect(t.inputTokens).toBe(8000);
    expect(t.toolCalls).toBe(16);
    expect(t.byState).toEqual({ COMPLETED: 4, FAILED: 1, BLOCKED: 1, CANCELLED: 1, INTERRUPTED: 1 });
    expect([t.completed, t.accepted, t.rejected, t.unreviewed]).toEqual([4, 2, 1, 1]);
    expect(t.costPerAcceptedJob).toBe(0.25);
    expect(costFormula(t)).toBe("cost per accepted job = $0.5000 total / 2 accepted = $0.2500");
  });

  it("gives null, and says so, when nothing was accepted", () => {
    const report = buildCostReport({
      runs: [run({ usage: usage(0.3) }), run({ state: "FAILED", usage: usage(0.1) })],
      steps: new Map(),
    });
    expect(report.total.costPerAcceptedJob).toBeNull();
    expect(costFormula(report.total)).toMatch(/= \$0\.4000 total \/ 0 accepted: none accepted yet/);
  });

  it("breaks the figures down by agent/workflow, most expensive first, and filters", () => {
    const runs = [
      run({ agent: "a", workflow: "x", usage: usage(0.1), acceptance: accepted }),
      run({ agent: "a", workflow: "x", state: "FAILED", usage: usage(0.1) }),
      run({ agent: "a", workflow: "y", usage: usage(0.5) }),
      run({ agent: "b", workflow: "x", usage: usage(0.01), acceptance: accepted }),
    ];
    const report = buildCostReport({ runs, steps: new Map() });
    expect(report.byWorkflow.map((g) => [g.agent, g.workflow, g.runs, g.costUsd, g.costPerAcceptedJob])).toEqual([
      ["a", "y", 1, 0.5, null],
      ["a", "x", 2, 0.2, 0.2],
      ["b", "x", 1, 0.01, 0.01],
    ]);
    const onlyA = buildCostReport({ runs, steps: new Map() }, { agent: "a" });
    expect(onlyA.filter).toEqual({ agent: "a", workflow: null });
    expect(onlyA.total.runs).toBe(3);
    expect(onlyA.total.costUsd).toBe(0.7);
    expect(onlyA.total.costPerAcceptedJob).toBe(0.7);
    const ax = buildCostReport({ runs, steps: new Map() }, { agent: "a", workflow: "x" });
    expect(ax.byWorkflow).toHaveLength(1);
    expect(ax.total.costUsd).toBe(0.2);
  });

  it("sums the steps of a run that has no recorded usage", () => {
    const open = run({ state: "RUNNING" });
    const steps = new Map([
      [
        open.id,
        [
          step(open.id, 1, { usage: { inputTokens: 10, outputTokens: 2, modelCalls: 1, costUsd: 0.003 } }),
          step(open.id, 2, { kind: "llm", usage: { inputTokens: 5, outputTokens: 1, modelCalls: 1, costUsd: 0.001 } }),
        ],
      ],
    ]);
    expect(runsNeedingSteps([open])).toEqual([open.id]);
    const report = buildCostReport({ runs: [open], steps });
    expect(report.total).toMatchObject({ costUsd: 0.004, inputTokens: 15, modelCalls: 2, toolCalls: 1, steps: 2 });
    expect(report.countedFromSteps).toBe(1);
  });

  it("counts a parent from its own steps, so its children's cost (in its usage) is not counted twice", () => {
    const parent = run({ id: "p", usage: usage(1.5), acceptance: accepted });
    const child = run({ id: "p.2", parentRunId: "p", agent: "helper", usage: usage(1) });
    expect(runsNeedingSteps([parent, child])).toEqual(["p"]);
    const steps = new Map([
      ["p", [step("p", 1, { usage: { inputTokens: 1, outputTokens: 1, modelCalls: 1, costUsd: 0.5 } })]],
    ]);
    const report = buildCostReport({ runs: [parent, child], steps });
    expect(report.total.costUsd).toBe(1.5);
    expect(report.byWorkflow.map((g) => [g.agent, g.costUsd])).toEqual([
      ["helper", 1],
      ["reports", 0.5],
    ]);
  });

  it("counts a run listed twice once", () => {
    const r = run({ usage: usage(0.2), acceptance: accepted });
    expect(buildCostReport({ runs: [r, r], steps: new Map() }).total.runs).toBe(1);
  });
});

describe("usageOfSteps", () => {
  it("ignores figures that are not finite numbers", () => {
    const s = step("r", 1, {
      usage: { inputTokens: Number.NaN, outputTokens: 4, modelCalls: 1, costUsd: Number.POSITIVE_INFINITY },
    });
    expect(usageOfSteps([s], { children: false })).toEqual({
      inputTokens: 0,
      outputTokens: 4,
      modelCalls: 1,
      costUsd: 0,
      toolCalls: 1,
      steps: 1,
    });
  });
});

describe("usd", () => {
  it("shows four decimals, or two significant digits for a cost below that", () => {
    expect(usd(0.25)).toBe("0.2500");
    expect(usd(0)).toBe("0.0000");
    expect(usd(0.0000012)).toBe("0.0000012");
  });
});
