import { RunNotFoundError } from "../../core/errors.ts";
import { withPendingCancel } from "../../core/pending-cancel.ts";
import type { RunRecord, StopRequest, Versions } from "../../core/records.ts";
import { isTerminal } from "../../core/run-state.ts";
import type { StopRunRequest } from "../contract/stop-store.ts";
import { Plan } from "./plan.ts";

/** The rules of stop requests, shared by every backend (see `wait-rules.ts`). */

/**
 * `requestStop`: the backend loads the run. A terminal run is left as it is; a PENDING run is
 * cancelled at once; a PAUSED or INTERRUPTED run moves to where a worker carries the request out
 * (CANCELLING, or RESUMING to be suspended); a run a worker holds keeps the request for it — so
 * does any run under a live lease (a PENDING run claimed but not started yet) and a
 * NEEDS_RECONCILIATION run, whose cancel waits for the operator's `reconcile` (an effect's outcome
 * is unknown: the run must not end as if it were known). Nothing but the run is needed: the one
 * run a stop ends at once, a top-level PENDING run, has no waits, no parent and no children.
 */
export function planStop(input: { run: RunRecord | undefined; request: StopRunRequest }): Plan {
  const plan = new Plan();
  if (!input.run) throw new RunNotFoundError(`no run with id "${input.request.runId}"`);
  // A child cancelled on its own must end through a worker, so that its end resolves the
  // parent's wait on it (`planEnd`); a top-level PENDING run is cancelled at once.
  stopInPlan(plan, input.run, input.request.request, input.request.versions, {
    cancelPendingAtOnce: input.run.parentRunId === null,
  });
  return plan;
}

/** Stores a stop request on a run in `plan` and carries it out where no worker need (see {@link planStop}). */
export function stopInPlan(
  plan: Plan,
  loaded: RunRecord,
  request: StopRequest,
  versions: Versions,
  options: { cancelPendingAtOnce: boolean },
): void {
  const run = plan.current(loaded);
  if (isTerminal(run.state) && run.state !== "INTERRUPTED") return;
  // A cancel overrides a suspend; a suspend never overrides a cancel.
  if (run.stopRequest?.kind === "cancel" && request.kind === "suspend") return;
  const withRequest: RunRecord = { ...run, stopRequest: request };
  plan.update(withRequest);
  const common = { actor: request.by, versions, at: request.at, fence: { unowned: true as const, now: request.at } };
  // A live lease (a worker claimed the run and has not started it, or still holds it): that worker
  // carries the request out, as for a RUNNING run.
  const held = run.leaseOwner !== null && run.leaseExpiresAt !== null && run.leaseExpiresAt > request.at;
  if (!held && request.kind === "cancel") {
    if (run.state === "PENDING" && options.cancelPendingAtOnce) {
      plan.transition(withRequest, {
        ...common,
        to: "CANCELLED",
        reason: `cancelled by ${request.by.kind} ${request.by.id} before it started: ${request.reason}`,
        patch: {
          error: {
            name: "CancelledError",
            code: "CANCELLED",
            message: `cancelled before it started: ${request.reason}`,
            data: { by: request.by.id, stopped: "before_start", inFlight: [] },
          },
        },
      });
      return;
    }
    if (run.state === "NEEDS_RECONCILIATION") {
      // No worker holds or claims it: it waits for an operator, and so does the cancel. Ended now,
      // its unknown effect could never be reconciled; the reconcile lets a worker finish the cancel.
      plan.update({ ...withRequest, error: withPendingCancel(run.error, request) });
      return;
    }
    if (run.state === "PAUSED" || run.state === "INTERRUPTED") {
      plan.transition(withRequest, {
        ...common,
        to: "CANCELLING",
        reason: `cancel requested by ${request.by.kind} ${request.by.id}: ${request.reason}`,
      });
      return;
    }
  } else if (!held && request.kind === "suspend" && run.state === "PAUSED" && run.pausedReason !== "suspended_orphan") {
    plan.transition(withRequest, {
      ...common,
      to: "RESUMING",
      reason: `to be suspended: ${request.reason}`,
    });
    return;
  }
  // A worker holds (or will claim) the run: it carries the request out. Only a holder needs waking.
  if (run.leaseOwner !== null) plan.wakes.push({ kind: "stop", runId: run.id });
}
