import { InvalidInputError } from "./errors.ts";
import type { Json, RunRecord, StepRecord } from "./records.ts";

/**
 * The journal a fork starts with (DESIGN §4, "Fork and rerun"): pure rules over the source run's
 * steps, shared by `Runtime.fork` and `Runtime.rerun`.
 */

/** The steps of a run's workflow (not the compensations a worker ran after it). */
function workflowSteps(steps: readonly StepRecord[]): StepRecord[] {
  return steps.filter((s) => s.effect?.compensates === undefined).sort((a, b) => a.seq - b.seq);
}

/**
 * The source's steps before `fromStep`, copied for the fork `runId`: stamped with its id and epoch
 * 0, the wait steps on a child's result renamed after the fork's child ids (`<run id>.<seq>`, as a
 * replay of the fork asks for them). Refuses a step number out of range, and a prefix that holds a
 * step that has not finished, an effect whose outcome is open, a compensation, or a spawned child
 * whose result the prefix does not hold (the fork would wait for a child that does not exist).
 */
export function forkJournal(
  source: RunRecord,
  steps: readonly StepRecord[],
  fromStep: number,
  runId: string,
): StepRecord[] {
  const workflow = workflowSteps(steps);
  const last = workflow.at(-1)?.seq ?? 0;
  if (!Number.isInteger(fromStep) || fromStep < 1 || fromStep > last + 1) {
    throw new InvalidInputError(
      `cannot fork run ${source.id} from step ${fromStep}: its workflow has ${last} steps, so fork from a step between 1 and ${last + 1} (\`cairn show ${source.id}\` lists them)`,
    );
  }
  const copied = steps.filter((s) => s.seq < fromStep).sort((a, b) => a.seq - b.seq);
  for (const step of copied) checkCopied(source, step, fromStep);
  checkChildren(source, copied, fromStep);
  const rename = (name: string) =>
    name.startsWith(`result:${source.id}.`) ? `result:${runId}.${name.slice(`result:${source.id}.`.length)}` : name;
  return copied.map((step) => {
    const copy: StepRecord = {
      ...structuredClone(step),
      runId,
      epoch: 0,
      name: step.kind === "wait" ? rename(step.name) : step.name,
    };
    if (step.kind === "child" && step.status === "completed") copy.result = { runId: `${runId}.${step.seq}` } as Json;
    return copy;
  });
}

function checkCopied(source: RunRecord, step: StepRecord, fromStep: number): void {
  const where = `step ${step.seq} (${step.kind} "${step.name}") of run ${source.id}`;
  const fix = `fork from step ${step.seq} or earlier`;
  if (step.effect?.compensates !== undefined) {
    throw new InvalidInputError(`cannot fork from step ${fromStep}: ${where} is a compensation; ${fix}`);
  }
  if (step.status === "started") {
    throw new InvalidInputError(`cannot fork from step ${fromStep}: ${where} has not finished; ${fix}`);
  }
  const effect = step.effect;
  if (effect && effect.status !== "applied" && effect.status !== "not_applied") {
    throw new InvalidInputError(
      `cannot fork from step ${fromStep}: the outcome of effect ${effect.id} (${where}) is ${effect.status}; reconcile it first (\`cairn reconcile ${source.id} ${effect.id}\`) or ${fix}`,
    );
  }
}

function checkChildren(source: RunRecord, copied: readonly StepRecord[], fromStep: number): void {
  const awaited = new Set(copied.filter((s) => s.kind === "wait").map((s) => s.name));
  for (const step of copied) {
    if (step.kind !== "child" || awaited.has(`result:${source.id}.${step.seq}`)) continue;
    throw new InvalidInputError(
      `cannot fork run ${source.id} from step ${fromStep}: step ${step.seq} spawned child ${source.id}.${step.seq}, whose result comes after that point; fork from step ${step.seq} or earlier, or from after the step that waits for its result`,
    );
  }
}

/**
 * The step a FAILED run is rerun from: its last failed step when no step after it completed (a
 * tool that failed for good, the usual cause); otherwise the workflow failed in its own code
 * after its last step, and the rerun keeps every step and goes on from the next one.
 */
export function rerunPoint(steps: readonly StepRecord[]): number {
  const workflow = workflowSteps(steps);
  const failed = workflow.filter((s) => s.status === "failed").at(-1);
  const last = workflow.at(-1)?.seq ?? 0;
  const points = [last + 1];
  if (failed && !workflow.some((s) => s.seq > failed.seq && s.status === "completed")) points.push(failed.seq);
  // Steps the failed execution abandoned (started, never finished) are run again.
  const started = workflow.find((s) => s.status === "started");
  if (started) points.push(started.seq);
  return Math.min(...points);
}
