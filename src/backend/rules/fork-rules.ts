import { InvalidInputError, RunNotFoundError } from "../../core/errors.ts";
import type { RunRecord, StepRecord, TransitionRecord } from "../../core/records.ts";
import type { ForkRunRequest } from "../contract/fork-store.ts";
import { pendingRun } from "./run-rules.ts";

/**
 * The rule of `forkRun`, shared by every backend: called inside the backend's transaction with
 * the source run as stored now, it refuses an unknown source, a key and steps of another run, and
 * returns the fork (PENDING, `forkedFrom` set), its first transition, its steps and the source
 * with the fork appended to its `forks`. The backend writes them all or nothing.
 */
export function planFork(
  source: RunRecord | undefined,
  request: ForkRunRequest,
): { run: RunRecord; transition: TransitionRecord; steps: StepRecord[]; source: RunRecord } {
  const { forkedFrom } = request;
  if (!source) {
    throw new RunNotFoundError(`no run with id "${forkedFrom.runId}" to fork; list runs with \`cairn runs\``);
  }
  if (request.run.key !== null) {
    throw new InvalidInputError(
      `fork ${request.run.id} of run ${source.id} cannot take a key; a key names one run for good`,
    );
  }
  const stray = request.steps.find((s) => s.runId !== request.run.id);
  if (stray) {
    throw new InvalidInputError(
      `fork ${request.run.id} of run ${source.id}: step ${stray.seq} belongs to run ${stray.runId}; copy the steps with the fork's id`,
    );
  }
  const { run, transition } = pendingRun(request.run);
  const fork: RunRecord = { ...run, forkedFrom: structuredClone(forkedFrom) };
  const ref = { runId: run.id, fromStep: forkedFrom.fromStep, kind: forkedFrom.kind, at: forkedFrom.at };
  const steps = request.steps.map((s) => ({ ...structuredClone(s), epoch: 0 }));
  return { run: fork, transition, steps, source: { ...source, forks: [...(source.forks ?? []), ref] } };
}
