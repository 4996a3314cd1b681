import { CairnError, type CairnErrorOptions, markErrorClasses } from "./cairn-error.ts";

/* Effects, their outcomes and their compensations (DESIGN §5). */

/**
 * Thrown by an effect tool to say that its effect definitely did not happen (the service
 * answered that it refused, or the request never left): the attempt is retried under the
 * tool's policy with the same idempotency key. Any other error leaves the outcome unknown, and
 * the tool's `status` query (or an operator) settles it.
 */
export class EffectNotAppliedError extends CairnError {
  readonly code: "EFFECT_NOT_APPLIED" | "EFFECT_REFUSED" = "EFFECT_NOT_APPLIED";
  static override readonly retryable: boolean = true;
}

/**
 * The effect definitely did not happen and never will on a retry (an account without the funds, a
 * closed account): the step fails at once. The run's compensations, if asked for, undo what came before.
 */
export class EffectRefusedError extends EffectNotAppliedError {
  override readonly code = "EFFECT_REFUSED" as const;
  static override readonly retryable: boolean = false;
}

/**
 * An effect's outcome is unknown (its attempt ended without one and no status query could
 * settle it): the run is NEEDS_RECONCILIATION until an operator calls `reconcile`. The run's
 * error while it waits, naming the effect.
 */
export class EffectUnresolvedError extends CairnError {
  readonly code = "EFFECT_UNRESOLVED" as const;
  readonly effectId: string;
  constructor(message: string, details: { effectId: string }, options?: CairnErrorOptions) {
    super(message, options);
    this.effectId = details.effectId;
  }
}

/** `reconcile` named an effect the run does not have, or one whose outcome is known. */
export class EffectNotFoundError extends CairnError {
  readonly code = "EFFECT_NOT_FOUND" as const;
}

/** A compensation could not undo an applied effect: the run ends FAILED naming what is left. */
export class CompensationFailedError extends CairnError {
  readonly code = "COMPENSATION_FAILED" as const;
}

markErrorClasses({
  EffectNotAppliedError,
  EffectRefusedError,
  EffectUnresolvedError,
  EffectNotFoundError,
  CompensationFailedError,
});
