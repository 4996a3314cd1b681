import { ImportConflictError } from "../../core/errors.ts";
import type { RunRecord, StepRecord } from "../../core/records.ts";
import { OWNED_STATES } from "../../core/run-state.ts";
import type { ImportRunInput, ImportRunResult } from "../contract/import-store.ts";
import { Plan } from "./plan.ts";
import { wakeFor } from "./transition-rules.ts";

/**
 * The rule of `importRun` (DESIGN §5, "Moving a run"), shared by every backend: called inside the
 * backend's transaction with the run its id names and the run its key names (as stored now), it
 * returns the existing run untouched, refuses a key taken by another run or a record that is not
 * whole, and otherwise plans the run's row (without a lease), its transitions, waits, signals and
 * wake-up; the steps the backend writes beside the plan, stamped with the run's epoch.
 */
export function planImport(
  input: ImportRunInput,
  existing: RunRecord | undefined,
  byKey: RunRecord | undefined,
): { existing: ImportRunResult } | { plan: Plan; run: RunRecord; steps: StepRecord[] } {
  if (existing) return { existing: { run: existing, created: false } };
  checkWhole(input);
  const { run } = input;
  if (byKey && byKey.id !== run.id) {
    throw new ImportConflictError(
      `run ${run.id} cannot be imported: its key "${run.key}" names run ${byKey.id} (${byKey.state}) of ${run.agent}.${run.workflow} here; a key names one run`,
    );
  }
  const stored: RunRecord = { ...run, leaseOwner: null, leaseExpiresAt: null };
  const plan = new Plan();
  plan.created.push(stored);
  plan.transitions.push(...input.transitions);
  for (const wait of input.waits) plan.wait(wait);
  plan.signals.push(...input.signals);
  const wake = wakeFor(stored.id, stored.state);
  if (wake) plan.wakes.push(wake);
  const steps = input.steps.map((step) => ({ ...step, epoch: stored.epoch }));
  return { plan, run: stored, steps };
}

/** Refuses a record that could not be continued as it is. */
function checkWhole(input: ImportRunInput): void {
  const { run, transitions } = input;
  const refuse = (why: string): never => {
    throw new ImportConflictError(`run ${run.id} cannot be imported: ${why}`);
  };
  transitions.forEach((t, i) => {
    if (t.runId !== run.id) refuse(`transition ${t.id} belongs to run ${t.runId}`);
    if (t.id !== i + 1)
      refuse(`its transition ids are not 1 … ${transitions.length} without a gap (found ${t.id} at ${i + 1})`);
  });
  const last = transitions.at(-1);
  if (!last || last.id !== run.lastTransitionId || last.to !== run.state) {
    refuse(
      `its last transition (${last ? `${last.id} to ${last.to}` : "none"}) is not its state (${run.lastTransitionId}, ${run.state})`,
    );
  }
  if (
    OWNED_STATES.has(run.state) &&
    run.state !== "RESUMING" &&
    run.state !== "CANCELLING" &&
    run.state !== "RECONCILING"
  ) {
    refuse(`it is ${run.state}, held by a worker where it was exported; export it once it paused or stopped`);
  }
  for (const part of [input.steps, input.waits, input.signals]) {
    for (const record of part) if (record.runId !== run.id) refuse(`it holds a record of run ${record.runId}`);
  }
}
