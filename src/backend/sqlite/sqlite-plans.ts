import { InvalidInputError } from "../../core/errors.ts";
import type { RunRecord } from "../../core/records.ts";
import { rowToRun, runValues } from "../rows/run-rows.ts";
import { signalValues } from "../rows/signal-rows.ts";
import { transitionParams } from "../rows/transition-rows.ts";
import { waitValues } from "../rows/wait-rows.ts";
import type { Plan } from "../rules/plan.ts";
import type { Statements } from "./sqlite-statements.ts";

/**
 * What the writes of `SqliteBackend` share. Each multi-statement write is a better-sqlite3
 * transaction that its role file prepares once per connection and runs with `.immediate` (BEGIN
 * IMMEDIATE), so it holds the write lock from its first read. The writes of waits, signals, stops
 * and run endings load the rows a planner of `../rules/` names, call it, and write the
 * {@link Plan} it returns with {@link applyPlan}, exactly as `InMemoryBackend` does.
 */

/** Where a plan is written: the file (named in errors), told when the plan wakes a run. */
export interface PlanTarget {
  readonly path: string;
  /** The plan has wake-ups: the connection rings the file's bell after the commit. */
  noteWakes(): void;
}

/**
 * Writes a plan inside the caller's transaction, in an order the constraints accept: changed
 * runs (a run that was continued leaves the key index before its successor enters it), new runs,
 * transitions, waits, then signals (a signal stored already keeps its arrival order).
 */
export function applyPlan(s: Statements, plan: Plan, file: PlanTarget): void {
  for (const run of plan.runs.values()) s.updateRun.run(...runValues(run).slice(1), run.id);
  for (const run of plan.created) insertNewRun(s, run, file);
  for (const t of plan.transitions) s.insertTransition.run(...transitionParams(t));
  for (const w of plan.waits) s.upsertWait.run(...waitValues(w));
  for (const signal of plan.signals) s.upsertSignal.run(...signalValues(signal));
  if (plan.wakes.length > 0) file.noteWakes();
}

/** Inserts a new run, refusing an id that is taken. */
export function insertNewRun(s: Statements, run: RunRecord, file: PlanTarget): void {
  if (s.runExists.get(run.id)) {
    throw new InvalidInputError(`run id "${run.id}" already exists in "${file.path}"; run ids must be unique`);
  }
  s.insertRun.run(...runValues(run));
  // A new run is runnable.
  file.noteWakes();
}

/** The run with this id, as stored now. */
export function getRun(s: Statements, runId: string): RunRecord | undefined {
  const row = s.getRun.get(runId);
  return row && rowToRun(row);
}
