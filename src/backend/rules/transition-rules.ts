import { IllegalTransitionError, LeaseLostError, RunNotFoundError } from "../../core/errors.ts";
import type { RunRecord, TransitionRecord } from "../../core/records.ts";
import { isTerminal, type RunState } from "../../core/run-state.ts";
import { storableText } from "../../core/text.ts";
import { assertTransition } from "../../core/transitions.ts";
import type { TransitionRequest } from "../contract/transition-store.ts";
import type { Wake } from "../contract/wake-ups.ts";
import { RUNNABLE_STATES } from "./lease-rules.ts";

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
  if (request.expectLastTransitionId !== undefined && run.lastTransitionId !== request.expectLastTransitionId) {
    throw new IllegalTransitionError(
      `run ${run.id}: transition ${request.from} -> ${request.to} refused, the run moved on (transition ${run.lastTransitionId}, expected ${request.expectLastTransitionId}); try again`,
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

/** The wake-up a transition into `state` sends, if any (shared by the backends). */
export function wakeFor(runId: string, state: RunState): Exclude<Wake, { kind: "reconnected" }> | undefined {
  if (RUNNABLE_STATES.has(state)) return { kind: "runnable", runId };
  if (isTerminal(state)) return { kind: "ended", runId };
  return undefined;
}
