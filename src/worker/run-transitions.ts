import type { TransitionRequest } from "../backend/backend.ts";
import { usageOfSteps } from "../core/budget.ts";
import type { SandboxPlace } from "../core/envelope/sandbox-slot.ts";
import type { Logger } from "../core/logger.ts";
import type { RunRecord, RunUsage, StepRecord } from "../core/records.ts";
import { isTerminal, type RunState } from "../core/run-state.ts";
import { destroyRunSandboxes, endsSandboxes } from "./sandbox-cleanup.ts";
import type { WorkerDeps } from "./worker-options.ts";

/**
 * How the worker writes a run's transitions: fenced (by default by the epoch it holds), under the
 * versions in force now, with the run's usage on an ending, and told to the runtime; and the
 * reasons it gives for them.
 */

/** What a worker's transition may change (the rest of the request is filled in). */
export type RunChange = Pick<
  TransitionRequest,
  "to" | "actor" | "reason" | "patch" | "pausedReason" | "successor" | "steps"
>;

/**
 * Writes a transition of `run` and returns the run after it. A run's usage (children that ended
 * included) is written with the transition that ends it: as `counted` (the run's envelope here)
 * counted it, else summed over its stored steps.
 */
export async function writeTransition(
  deps: WorkerDeps,
  run: RunRecord,
  change: RunChange,
  fence: TransitionRequest["fence"] = { epoch: run.epoch },
  counted?: { usage(): RunUsage | undefined },
): Promise<RunRecord> {
  // The stored journal, read at most once however many parts of an ending need it.
  let stored: Promise<StepRecord[]> | undefined;
  const journal = () => (stored ??= deps.backend.loadSteps(run.id));
  if (deps.sandbox && endsSandboxes(change.to)) {
    change = await withSandboxCleanup(deps, deps.sandbox, run, change, await journal());
  }
  if (isTerminal(change.to) && change.to !== "INTERRUPTED" && change.patch?.usage === undefined) {
    const usage = counted?.usage() ?? usageOfSteps(await journal());
    change = { ...change, patch: { ...change.patch, usage } };
  }
  const result = await deps.backend.transition({
    runId: run.id,
    from: run.state,
    versions: deps.versions(run.agent),
    at: Date.now(),
    fence,
    ...change,
  });
  deps.onTransition(result.transition, result.run);
  return result.run;
}

/**
 * A run that ends: its sandboxes destroyed first, the transition carrying a cleanup step for each
 * (numbered after every step the stored journal and the transition hold). Only on a runtime with
 * sandboxes.
 */
async function withSandboxCleanup(
  deps: WorkerDeps,
  place: SandboxPlace,
  run: RunRecord,
  change: RunChange,
  stored: readonly StepRecord[],
): Promise<RunChange> {
  const journal = [...stored, ...(change.steps ?? [])];
  const cleanup = await destroyRunSandboxes(place, run, journal, deps.logger);
  return cleanup.length === 0 ? change : { ...change, steps: [...(change.steps ?? []), ...cleanup] };
}

/**
 * Records INTERRUPTED for a RUNNING run this worker holds and will not drive on (shutdown), and
 * releases it.
 */
export async function handBack(deps: WorkerDeps, workerId: string, run: RunRecord, reason: string): Promise<void> {
  await writeTransition(deps, run, {
    to: "INTERRUPTED",
    actor: { kind: "worker", id: workerId },
    reason,
    // A deploy is not a crash: it must not use up the bound on automatic recoveries.
    patch: { releaseLease: true, resetRecoveries: true },
  }).catch((error: unknown) => ignoreRace(deps.logger, error));
}

/** Another worker got there first: not an error. */
export function ignoreRace(logger: Logger, error: unknown): void {
  const code = (error as { code?: string }).code;
  if (code === "LEASE_LOST" || code === "ILLEGAL_TRANSITION") return;
  logger.warn({ error: String(error) }, "recovery step failed");
}

/** The reason of a claimed run's move to RUNNING, by the state it was claimed in. */
export function startReason(workerId: string, claimedIn: RunState): string {
  if (claimedIn === "PENDING") return `claimed by worker ${workerId}`;
  if (claimedIn === "RECONCILING") return `reconciled; resumed from checkpoint by worker ${workerId}`;
  return `resumed from checkpoint by worker ${workerId}`;
}

/** The first line of `text`, at most 300 characters: what a reason quotes of an error. */
export function firstLine(text: string): string {
  const line = text.split("\n")[0] ?? "";
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
