import { usageOfSteps } from "../core/budget.ts";
import type { RunRecord, RunUsage, StepRecord } from "../core/records.ts";

/**
 * What a run used, for the run contract and the cost report: the figures written with the run's
 * ending (`RunRecord.usage`, children included), or, for a run that has none (still open, or
 * stored before usage was recorded), the sum over its own steps.
 */
export function usageOfRun(
  run: Pick<RunRecord, "usage">,
  steps: readonly StepRecord[],
): { usage: RunUsage; source: "run" | "steps" } {
  return run.usage
    ? { usage: { ...run.usage }, source: "run" }
    : { usage: usageOfSteps(steps, { children: false }), source: "steps" };
}
