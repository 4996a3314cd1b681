import type { StepIdentity } from "../context.ts";
import type { SerializedError } from "../errors.ts";
import type { Json, StepRecord } from "../records.ts";
import type { PauseOutcome } from "./wait-steps.ts";

/** How an envelope's execution ended. */
export type EnvelopeOutcome =
  /**
   * `steps`: results not written yet, which the transition that completes the run commits with its
   * output (nothing is queued after them: the journal accepts no more writes).
   */
  | { kind: "completed"; output: Json; steps?: readonly StepRecord[] }
  | { kind: "failed"; error: SerializedError }
  /** The run was taken away (lease lost) or stopped (shutdown, cancellation) before it finished. */
  | { kind: "stopped"; reason: unknown }
  /**
   * Every step the workflow awaits is a wait: the run should pause. `waits` are the ones opened
   * in this execution (not stored yet), `blockedOn` the ids of all it is blocked on.
   */
  | PauseOutcome
  /** `ctx.continueAsNew(input)`. */
  | { kind: "continued"; input: Json }
  /** An effect's outcome is unknown and nothing could settle it: an operator must (`reconcile`). */
  | { kind: "needs_reconciliation"; error: SerializedError };

/** How compensating a run ended. */
export type CompensationOutcome =
  /** Every applied effect with a declared compensation was undone (`undone` names them). */
  | { kind: "compensated"; undone: string[] }
  /** Some could not be undone: `failed` names each with why. */
  | { kind: "compensation_failed"; undone: string[]; failed: string[] }
  | Extract<EnvelopeOutcome, { kind: "needs_reconciliation" | "stopped" }>;

/** A step in flight when a cancellation began, and how it ended. */
export interface InFlightStep extends StepIdentity {
  outcome: "completed" | "failed" | "unknown";
}
