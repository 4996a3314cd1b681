import {
  AlreadyDecidedError,
  IllegalTransitionError,
  LeaseLostError,
  RunNotCompletedError,
  RunNotFoundError,
} from "../core/errors.ts";
import type { AcceptanceRecord, RunRecord, TransitionRecord } from "../core/records.ts";
import { isTerminal, type RunState } from "../core/run-state.ts";
import { storableText } from "../core/text.ts";
import { assertTransition } from "../core/transitions.ts";
import type { CreateRunInput, TransitionRequest, Wake } from "./backend.ts";

/**
 * The checks and the arithmetic of a transition, shared by every backend so that they agree
 * exactly: called inside the backend's transaction with the run as it is stored now, it throws
 * when the write must be refused and otherwise returns the updated run and the new transition.
 */
export function applyTransition(
  run: RunRecord | undefined,
  request: TransitionRequest,
): { run: RunRecord; transition: TransitionRecord } {
  if (!run) throw new RunNotFoundError(`no run with id "${request.runId}"`);
  const { fence } = request;
  if ("epoch" in fence) {
    if (run.epoch !== fence.epoch) {
      throw new LeaseLostError(
        `run ${run.id}: write under lease epoch ${fence.epoch} refused, the run is now at epoch ${run.epoch} (owner ${run.leaseOwner ?? "none"}); this worker lost the run`,
      );
    }
  } else if ("takeover" in fence) {
    if (run.epoch !== fence.takeover.epoch || run.leaseExpiresAt !== fence.takeover.leaseExpiresAt) {
      throw new LeaseLostError(
        `run ${run.id}: takeover refused, the lease changed since it was seen lapsed (epoch ${fence.takeover.epoch} -> ${run.epoch})`,
      );
    }
  } else if (run.leaseOwner !== null && run.leaseExpiresAt !== null && run.leaseExpiresAt > fence.now) {
    throw new LeaseLostError(
      `run ${run.id} is held by worker ${run.leaseOwner} until ${new Date(run.leaseExpiresAt).toISOString()}; try again when its lease lapses`,
    );
  }
  if (run.state !== request.from) {
    throw new IllegalTransitionError(
      `run ${run.id}: transition ${request.from} -> ${request.to} refused, the run is ${run.state}`,
      { from: run.state, to: request.to },
    );
  }
  assertTransition(request.from, request.to, {
    pausedReason: request.pausedReason,
    errorCode: run.error?.code,
  });
  const patch = request.patch ?? {};
  const next: RunRecord = {
    ...run,
    state: request.to,
    pausedReason: request.pausedReason ?? null,
    lastTransitionId: run.lastTransitionId + 1,
    updatedAt: request.at,
  };
  if (patch.output !== undefined) next.output = patch.output;
  if (patch.error !== undefined) next.error = patch.error ?? undefined;
  if (patch.resetRecoveries) next.recoveries = 0;
  if (patch.clearStopRequest) next.stopRequest = undefined;
  if (patch.countRecovery) next.recoveries = next.recoveries + 1;
  if (patch.usage !== undefined) next.usage = patch.usage;
  if ("takeover" in fence) {
    next.epoch = run.epoch + 1;
    next.leaseOwner = null;
    next.leaseExpiresAt = null;
  }
  if (patch.releaseLease) {
    next.leaseOwner = null;
    next.leaseExpiresAt = null;
  }
  return { run: next, transition: transitionRecord(request, next.lastTransitionId) };
}

/** The transition `request` writes as its run's transition `id`. */
export function transitionRecord(request: TransitionRequest, id: number): TransitionRecord {
  return {
    runId: request.runId,
    id,
    at: request.at,
    actor: request.actor,
    from: request.from,
    to: request.to,
    pausedReason: request.pausedReason ?? null,
    // Reasons quote what code threw or asked (an error message, a question): stored as text.
    reason: storableText(request.reason),
    versions: request.versions,
  };
}

/** A new run in PENDING and its first transition (id 1, from null), as every backend stores them. */
export function pendingRun(input: CreateRunInput): { run: RunRecord; transition: TransitionRecord } {
  const run: RunRecord = {
    id: input.id,
    agent: input.agent,
    workflow: input.workflow,
    key: input.key,
    state: "PENDING",
    pausedReason: null,
    input: input.input,
    output: undefined,
    error: undefined,
    epoch: 0,
    leaseOwner: null,
    leaseExpiresAt: null,
    recoveries: 0,
    lastTransitionId: 1,
    versions: input.versions,
    meta: input.meta,
    parentRunId: input.parentRunId ?? null,
    parentClosePolicy: input.parentClosePolicy ?? (input.parentRunId ? "suspend" : null),
    stopRequest: undefined,
    continuedFrom: null,
    continuedTo: null,
    usage: undefined,
    acceptance: undefined,
    createdAt: input.at,
    updatedAt: input.at,
  };
  const transition: TransitionRecord = {
    runId: run.id,
    id: 1,
    at: input.at,
    actor: input.actor,
    from: null,
    to: "PENDING",
    pausedReason: null,
    reason: storableText(input.reason),
    versions: input.versions,
  };
  return { run, transition };
}

/**
 * States a worker claims: a new run, a run to resume, a run whose cancellation a worker must
 * finish (CANCELLING without a live lease: cancelled while PAUSED, or its worker was lost), and a
 * run an operator reconciled (RECONCILING: the worker moves it on to RUNNING and replays it).
 */
export const RUNNABLE_STATES: ReadonlySet<RunState> = new Set<RunState>([
  "PENDING",
  "RESUMING",
  "CANCELLING",
  "RECONCILING",
]);

/**
 * Whether `run` may be claimed at `now` (runnable state, no live lease, one of `agents` when
 * given). A lease named by `takeover` (its owner known to be gone, `ClaimRequest.takeover`) counts
 * as lapsed while the run's epoch and owner are still the ones it names.
 */
export function isClaimable(
  run: RunRecord,
  now: number,
  agents?: readonly string[],
  takeover?: { epoch: number; leaseOwner: string },
): boolean {
  const lostOwner = takeover !== undefined && run.epoch === takeover.epoch && run.leaseOwner === takeover.leaseOwner;
  return (
    RUNNABLE_STATES.has(run.state) &&
    (agents === undefined || agents.includes(run.agent)) &&
    (run.leaseOwner === null || run.leaseExpiresAt === null || run.leaseExpiresAt <= now || lostOwner)
  );
}

/** The run after a claim by `workerId`. */
export function claimed(run: RunRecord, workerId: string, now: number, leaseMs: number): RunRecord {
  return { ...run, epoch: run.epoch + 1, leaseOwner: workerId, leaseExpiresAt: now + leaseMs, updatedAt: now };
}

/** The wake-up a transition into `state` sends, if any (shared by the backends). */
export function wakeFor(runId: string, state: RunState): Exclude<Wake, { kind: "reconnected" }> | undefined {
  if (RUNNABLE_STATES.has(state)) return { kind: "runnable", runId };
  if (isTerminal(state)) return { kind: "ended", runId };
  return undefined;
}

/**
 * The rule of `recordAcceptance`, shared by every backend: called inside the backend's transaction
 * with the run as stored now, it refuses an unknown run (`RunNotFoundError`), a run that is not
 * COMPLETED (`RunNotCompletedError`) and a run that has a verdict already (`AlreadyDecidedError`),
 * and otherwise returns the run with `acceptance` set. Nothing else changes: it is not a
 * transition (no transition row; state, `lastTransitionId` and `updatedAt` stay as they are).
 */
export function applyAcceptance(run: RunRecord | undefined, runId: string, acceptance: AcceptanceRecord): RunRecord {
  if (!run) throw new RunNotFoundError(`no run with id "${runId}"; list runs with \`cairn runs\``);
  const verb = acceptance.decision === "accepted" ? "accept" : "reject";
  if (run.state !== "COMPLETED") {
    throw new RunNotCompletedError(
      `cannot ${verb} run ${run.id}: it is ${run.state}, and accept/reject need a COMPLETED run`,
    );
  }
  if (run.acceptance) {
    const prior = run.acceptance;
    throw new AlreadyDecidedError(
      `cannot ${verb} run ${run.id}: it was already ${prior.decision} by ${prior.by.kind} ${prior.by.id} at ${new Date(prior.at).toISOString()}${prior.note ? ` ("${prior.note}")` : ""}; a run gets one verdict`,
    );
  }
  return { ...run, acceptance };
}
