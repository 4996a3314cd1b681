/**
 * The run state vocabulary (DESIGN §3). Every state change of a run is one of the pairs in
 * `./transitions.ts`; nothing else in the code base decides what is legal.
 */

/** Every state a run can be in. */
export const RUN_STATES = [
  "PENDING",
  "RUNNING",
  "PAUSED",
  "RESUMING",
  "CANCELLING",
  "COMPENSATING",
  "NEEDS_RECONCILIATION",
  "RECONCILING",
  "COMPLETED",
  "FAILED",
  "BLOCKED",
  "INTERRUPTED",
  "CANCELLED",
  "COMPENSATED",
  "MOVED",
] as const;

/** The state of a run. */
export type RunState = (typeof RUN_STATES)[number];

/** Why a PAUSED run is paused; set only with PAUSED. */
export const PAUSED_REASONS = [
  "awaiting_child",
  "awaiting_signal",
  "awaiting_user",
  "awaiting_timer",
  "awaiting_approval",
  "suspended_orphan",
  "awaiting_retry",
] as const;

/** What a PAUSED run waits for. */
export type PausedReason = (typeof PAUSED_REASONS)[number];

/**
 * Terminal states: nothing more happens without an outside act (a resume, a reconcile, a fork),
 * so anything that waits for a run returns on each of them — but on an INTERRUPTED run that a
 * worker's automatic recovery takes up ({@link awaitsRecovery}).
 */
export const TERMINAL_STATES: ReadonlySet<RunState> = new Set<RunState>([
  "COMPLETED",
  "FAILED",
  "BLOCKED",
  "INTERRUPTED",
  "CANCELLED",
  "COMPENSATED",
  "MOVED",
]);

/**
 * States in which a worker owns the run under a lease and may be executing it. A worker can die
 * in any of them, so each can become INTERRUPTED.
 */
export const OWNED_STATES: ReadonlySet<RunState> = new Set<RunState>([
  "RUNNING",
  "RESUMING",
  "CANCELLING",
  "COMPENSATING",
  "RECONCILING",
]);

/** True when nothing more happens to a run in `state` without an outside act. */
export function isTerminal(state: RunState): boolean {
  return TERMINAL_STATES.has(state);
}

/**
 * True when a run stays as it is until someone acts: a terminal state, or NEEDS_RECONCILIATION
 * (an operator must say whether an effect happened). What `waitFor` returns on.
 */
export function isSettled(state: RunState): boolean {
  return TERMINAL_STATES.has(state) || state === "NEEDS_RECONCILIATION";
}

/** How many times a worker resumes an INTERRUPTED run on its own, unless told otherwise. */
export const DEFAULT_MAX_AUTO_RECOVERIES = 3;

/**
 * True for an INTERRUPTED run that automatic recovery will take up again: it has been recovered
 * fewer than `maxAutoRecoveries` times (a worker's bound, DESIGN §3). Whoever waits for the run's
 * outcome waits on through it, as through a RUNNING run: a crash or a deploy is not an outcome.
 */
export function awaitsRecovery(run: { state: RunState; recoveries: number }, maxAutoRecoveries: number): boolean {
  return run.state === "INTERRUPTED" && run.recoveries < maxAutoRecoveries;
}

/**
 * True when a run has an outcome for whoever waits for it: it settled, and it is not an
 * INTERRUPTED run that automatic recovery takes up again ({@link awaitsRecovery}).
 */
export function hasOutcome(run: { state: RunState; recoveries: number }, maxAutoRecoveries: number): boolean {
  return isSettled(run.state) && !awaitsRecovery(run, maxAutoRecoveries);
}

/** True for a string that names a run state. */
export function isRunState(value: string): value is RunState {
  return (RUN_STATES as readonly string[]).includes(value);
}
