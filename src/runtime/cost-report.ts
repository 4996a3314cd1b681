import { addRunUsage, EMPTY_USAGE, usageOfSteps } from "../core/budget.ts";
import { roundUsd } from "../core/prices.ts";
import type { RunRecord, RunUsage, StepRecord } from "../core/records.ts";
import type { RunState } from "../core/run-state.ts";

/**
 * Cost per accepted job (DESIGN §6): what all runs cost — failed, blocked, cancelled,
 * interrupted, retried and forked ones included — divided by the runs an operator accepted. A
 * run that nobody accepted still costs; that is the point of the figure.
 *
 * A run's cost here is its own: a run's recorded usage includes its children's, and children are
 * runs of their own in the report, so a run with children is counted from its own steps (else
 * every child would be counted twice). A run without recorded usage (still open, or stored before
 * usage was) is counted from its steps too.
 */

/** Which runs a cost report covers. */
export interface CostFilter {
  agent?: string;
  workflow?: string;
}

/** What runs cost and how many were accepted: for all runs, or for one agent/workflow. */
export interface CostFigures {
  runs: number;
  /** How many runs are in each state (states with none are left out). */
  byState: Partial<Record<RunState, number>>;
  /** US dollars, from the runtime's price table (a model with no price costs 0). */
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  toolCalls: number;
  steps: number;
  completed: number;
  accepted: number;
  rejected: number;
  /** COMPLETED runs with no verdict yet. */
  unreviewed: number;
  /** `costUsd / accepted`; null when no run was accepted (the cost is then spent on no accepted job). */
  costPerAcceptedJob: number | null;
}

/** The cost report of `runtime.costReport()` and `cairn cost`. */
export interface CostReport {
  filter: { agent: string | null; workflow: string | null };
  total: CostFigures;
  /** One entry per agent/workflow, most expensive first. */
  byWorkflow: (CostFigures & { agent: string; workflow: string })[];
  /** Runs whose figures were summed from their own steps (see the module comment). */
  countedFromSteps: number;
}

/** What {@link buildCostReport} needs. */
export interface CostReportInput {
  /** Every run to consider (the filter is applied here); children and parents alike. */
  runs: readonly RunRecord[];
  /** The steps of the runs {@link runsNeedingSteps} names, by run id. */
  steps: ReadonlyMap<string, readonly StepRecord[]>;
}

/**
 * The runs whose steps {@link buildCostReport} needs: those without recorded usage and those with
 * a child among `runs`.
 */
export function runsNeedingSteps(runs: readonly RunRecord[]): string[] {
  const parents = new Set(runs.map((r) => r.parentRunId).filter((id) => id !== null));
  return runs.filter((r) => r.usage === undefined || parents.has(r.id)).map((r) => r.id);
}

/** Builds the report. Pure; a run whose steps are needed but not given counts as having used nothing. */
export function buildCostReport(input: CostReportInput, filter: CostFilter = {}): CostReport {
  const parents = new Set(input.runs.map((r) => r.parentRunId).filter((id) => id !== null));
  const total = emptyFigures();
  const groups = new Map<string, CostFigures & { agent: string; workflow: string }>();
  let countedFromSteps = 0;
  const seen = new Set<string>();
  for (const run of input.runs) {
    if (seen.has(run.id)) continue;
    seen.add(run.id);
    if (filter.agent !== undefined && run.agent !== filter.agent) continue;
    if (filter.workflow !== undefined && run.workflow !== filter.workflow) continue;
    let usage: RunUsage;
    if (run.usage !== undefined && !parents.has(run.id)) usage = run.usage;
    else {
      usage = usageOfSteps(input.steps.get(run.id) ?? [], { children: false });
      countedFromSteps += 1;
    }
    const key = `${run.agent}/${run.workflow}`;
    let group = groups.get(key);
    if (!group) {
      group = { agent: run.agent, workflow: run.workflow, ...emptyFigures() };
      groups.set(key, group);
    }
    count(total, run, usage);
    count(group, run, usage);
  }
  const byWorkflow = [...groups.values()].map(finish);
  byWorkflow.sort((a, b) => b.costUsd - a.costUsd || (a.agent + a.workflow < b.agent + b.workflow ? -1 : 1));
  return {
    filter: { agent: filter.agent ?? null, workflow: filter.workflow ?? null },
    total: finish(total),
    byWorkflow,
    countedFromSteps,
  };
}

/**
 * The formula with its figures: `cost per accepted job = $0.0420 total / 3 accepted = $0.0140`,
 * or, with nothing accepted, says so.
 */
export function costFormula(figures: CostFigures): string {
  const spent = `$${usd(figures.costUsd)} total`;
  if (figures.costPerAcceptedJob === null) {
    return `cost per accepted job = ${spent} / 0 accepted: none accepted yet, so no accepted job to divide by (${figures.runs} ${figures.runs === 1 ? "run" : "runs"}, ${figures.unreviewed} completed and unreviewed)`;
  }
  return `cost per accepted job = ${spent} / ${figures.accepted} accepted = $${usd(figures.costPerAcceptedJob)}`;
}

/** Dollars with 4 decimals (model calls cost fractions of a cent); more when that would show 0. */
export function usd(amount: number): string {
  if (amount !== 0 && Math.abs(amount) < 0.00005) return amount.toPrecision(2);
  return amount.toFixed(4);
}

function emptyFigures(): CostFigures {
  return {
    runs: 0,
    byState: {},
    ...EMPTY_USAGE,
    completed: 0,
    accepted: 0,
    rejected: 0,
    unreviewed: 0,
    costPerAcceptedJob: null,
  };
}

function count(figures: CostFigures, run: RunRecord, usage: RunUsage): void {
  figures.runs += 1;
  figures.byState[run.state] = (figures.byState[run.state] ?? 0) + 1;
  const sum = addRunUsage(figures, usage);
  figures.inputTokens = sum.inputTokens;
  figures.outputTokens = sum.outputTokens;
  figures.modelCalls = sum.modelCalls;
  figures.costUsd = sum.costUsd;
  figures.toolCalls = sum.toolCalls;
  figures.steps = sum.steps;
  if (run.state !== "COMPLETED") return;
  figures.completed += 1;
  if (run.acceptance?.decision === "accepted") figures.accepted += 1;
  else if (run.acceptance?.decision === "rejected") figures.rejected += 1;
  else figures.unreviewed += 1;
}

function finish<F extends CostFigures>(figures: F): F {
  return {
    ...figures,
    costUsd: roundUsd(figures.costUsd),
    costPerAcceptedJob: figures.accepted > 0 ? roundUsd(figures.costUsd / figures.accepted) : null,
  };
}
