import type { RunRecord, RunUsage, StepRecord } from "../core/records.ts";

/**
 * What a run used, for the run contract and the cost report: the figures written with the run's
 * ending (`RunRecord.usage`, children included), or, for a run that has none (still open, or
 * stored before usage was recorded), the sum over its own steps.
 */

/** Usage with nothing used. */
export const NO_USAGE: Readonly<RunUsage> = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  modelCalls: 0,
  costUsd: 0,
  toolCalls: 0,
  steps: 0,
});

/**
 * The sum over `steps` of their model usage, with one tool call per step of kind `tool` and one
 * step per step record. A step's missing or non-finite figure counts as 0.
 */
export function usageOfSteps(steps: readonly StepRecord[]): RunUsage {
  const total = { ...NO_USAGE };
  for (const step of steps) {
    total.steps += 1;
    if (step.kind === "tool") total.toolCalls += 1;
    const usage = step.usage;
    if (!usage) continue;
    total.inputTokens += finite(usage.inputTokens);
    total.outputTokens += finite(usage.outputTokens);
    total.modelCalls += finite(usage.modelCalls);
    total.costUsd += finite(usage.costUsd);
  }
  total.costUsd = roundUsd(total.costUsd);
  return total;
}

/** Adds `b` to `a` (a new object). */
export function addUsage(a: RunUsage, b: RunUsage): RunUsage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    modelCalls: a.modelCalls + b.modelCalls,
    costUsd: roundUsd(a.costUsd + b.costUsd),
    toolCalls: a.toolCalls + b.toolCalls,
    steps: a.steps + b.steps,
  };
}

/** `run.usage` when it was recorded, else the sum over `steps` (the run's own). */
export function usageOfRun(
  run: Pick<RunRecord, "usage">,
  steps: readonly StepRecord[],
): { usage: RunUsage; source: "run" | "steps" } {
  return run.usage ? { usage: { ...run.usage }, source: "run" } : { usage: usageOfSteps(steps), source: "steps" };
}

/** Dollars kept to 1e-9, so that sums of many small costs do not show float noise. */
export function roundUsd(usd: number): number {
  return Math.round(usd * 1e9) / 1e9;
}

function finite(n: number | undefined): number {
  return typeof n === "number" && Number.isFinite(n) ? n : 0;
}
