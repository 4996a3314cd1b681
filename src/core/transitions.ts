import { IllegalTransitionError } from "./errors.ts";
import type { PausedReason, RunState } from "./run-state.ts";

/**
 * The allowed transitions of DESIGN §3, the one place that decides them. Backends call
 * {@link assertTransition} inside the transaction that writes a transition, so an illegal pair
 * can never be stored, whichever code path asks for it.
 */
export const TRANSITIONS: Readonly<Record<RunState, readonly RunState[]>> = {
  PENDING: ["RUNNING", "CANCELLED", "BLOCKED", "MOVED"],
  RUNNING: [
    "PAUSED",
    "COMPLETED",
    "FAILED",
    "BLOCKED",
    "INTERRUPTED",
    "CANCELLING",
    "COMPENSATING",
    "NEEDS_RECONCILIATION",
  ],
  PAUSED: ["RESUMING", "CANCELLING", "BLOCKED", "MOVED"],
  RESUMING: ["RUNNING", "CANCELLING", "COMPENSATING", "RECONCILING", "INTERRUPTED", "FAILED"],
  CANCELLING: ["CANCELLED", "COMPENSATING", "NEEDS_RECONCILIATION", "INTERRUPTED"],
  COMPENSATING: ["COMPENSATED", "FAILED", "NEEDS_RECONCILIATION", "INTERRUPTED"],
  NEEDS_RECONCILIATION: ["RECONCILING", "CANCELLED", "MOVED"],
  RECONCILING: ["RUNNING", "COMPLETED", "COMPENSATED", "FAILED", "CANCELLED", "NEEDS_RECONCILIATION", "INTERRUPTED"],
  INTERRUPTED: ["RESUMING", "CANCELLING", "MOVED"],
  FAILED: ["RESUMING", "MOVED"],
  COMPLETED: [],
  BLOCKED: [],
  CANCELLED: [],
  COMPENSATED: [],
  MOVED: [],
};

/** Codes of FAILED runs that may be resumed: the code changed under them and can be fixed. */
export const RESUMABLE_FAILURES: ReadonlySet<string> = new Set(["REPLAY_DIVERGENCE", "VERSION_MISMATCH"]);

/** True when `from -> to` is in the table. */
export function canTransition(from: RunState, to: RunState): boolean {
  return TRANSITIONS[from].includes(to);
}

/**
 * Throws {@link IllegalTransitionError} unless `from -> to` is allowed and the paused reason is
 * given exactly when `to` is PAUSED. FAILED -> RESUMING is only legal for a replay divergence;
 * the caller passes the run's error code so that rule is checked here too.
 */
export function assertTransition(
  from: RunState,
  to: RunState,
  details: { pausedReason?: PausedReason | undefined; errorCode?: string | undefined } = {},
): void {
  if (!canTransition(from, to)) {
    const allowed = TRANSITIONS[from];
    throw new IllegalTransitionError(
      `illegal run transition ${from} -> ${to} (allowed from ${from}: ${allowed.length ? allowed.join(", ") : "none, it is terminal"})`,
      { from, to },
    );
  }
  if (to === "PAUSED" && !details.pausedReason) {
    throw new IllegalTransitionError(`a transition to PAUSED needs a paused reason`, { from, to });
  }
  if (to !== "PAUSED" && details.pausedReason) {
    throw new IllegalTransitionError(
      `paused reason "${details.pausedReason}" given for a transition to ${to}; only PAUSED has one`,
      { from, to },
    );
  }
  if (from === "FAILED" && to === "RESUMING" && !RESUMABLE_FAILURES.has(details.errorCode ?? "")) {
    throw new IllegalTransitionError(
      `a FAILED run can only be resumed after a replay divergence or a version mismatch (its error is ${details.errorCode ?? "unknown"}); run it again as a new run instead: \`cairn rerun <runId>\` from its failed step, or \`cairn fork <runId> --from-step <n>\``,
      { from, to },
    );
  }
}
