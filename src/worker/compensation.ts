import type { TransitionRequest } from "../backend/backend.ts";
import type { AgentDefinition, CompensateMode } from "../core/agent-definition.ts";
import { withSteps } from "../core/cancel-settlement.ts";
import { compensationTargets } from "../core/envelope/compensation.ts";
import type { CompensationOutcome } from "../core/envelope/envelope-outcome.ts";
import type { WorkflowEnvelope } from "../core/envelope/workflow-envelope.ts";
import { CompensationFailedError, type SerializedError } from "../core/errors.ts";
import type { Actor, RunRecord, StepRecord } from "../core/records.ts";
import { serializeError } from "../core/serialize.ts";

/**
 * Compensation of a run that failed, was blocked or was cancelled (DESIGN §5): the worker moves
 * it to COMPENSATING, a fresh envelope runs the declared compensations of its applied effects
 * newest first, and the run ends COMPENSATED — or FAILED naming what could not be undone, or
 * NEEDS_RECONCILIATION when a compensation's own outcome is unknown.
 */

/** The mode a run compensates under: its own `compensate` option, else its agent's. */
export function compensateMode(run: RunRecord, agent: AgentDefinition | undefined): CompensateMode {
  const own = run.meta.compensate;
  if (own === "never" || own === "on_failure" || own === "on_failure_or_cancel") return own;
  return agent?.compensate ?? "never";
}

/** What {@link compensateRun} needs from the worker. */
export interface CompensationDeps {
  actor: Actor;
  loadSteps(runId: string): Promise<StepRecord[]>;
  /** Writes a transition of the run (fenced by its epoch) and returns the run after it. */
  transition(
    run: RunRecord,
    change: Pick<TransitionRequest, "to" | "actor" | "reason" | "patch" | "steps">,
  ): Promise<RunRecord>;
  /** A fresh envelope on the run's journal (the worker tracks it, so a shutdown can stop it). */
  envelope(run: RunRecord, journal: StepRecord[]): WorkflowEnvelope;
  /** Ends the run the way an execution that stopped ends (lease lost, shutdown, failed write). */
  stopped(run: RunRecord, reason: unknown): Promise<void>;
}

/**
 * Compensates `run` (RUNNING or CANCELLING) if it has applied effects with a declared
 * compensation: returns false (nothing done) when it has none, so the caller ends the run as it
 * would have. `why` says what ended the workflow; `error` is the run's error, kept on a
 * COMPENSATED run. `settled`: steps not stored yet (effects a cancel settled), written with the
 * move to COMPENSATING.
 */
export async function compensateRun(
  deps: CompensationDeps,
  run: RunRecord,
  why: string,
  error: SerializedError,
  settled: readonly StepRecord[] = [],
): Promise<boolean> {
  const journal = withSteps(await deps.loadSteps(run.id), settled);
  const targets = compensationTargets(journal);
  if (targets.length === 0) return false;
  const list = targets.map((s) => `${s.effect?.id} (${s.name})`).join(", ");
  const compensating = await deps.transition(run, {
    to: "COMPENSATING",
    actor: deps.actor,
    reason: `${why}; undoing ${targets.length} applied effect${targets.length === 1 ? "" : "s"}, newest first: ${list}`,
    patch: { error },
    ...(settled.length > 0 ? { steps: settled } : {}),
  });
  const outcome: CompensationOutcome = await deps.envelope(compensating, journal).compensate();
  switch (outcome.kind) {
    case "compensated":
      await deps.transition(compensating, {
        to: "COMPENSATED",
        actor: deps.actor,
        reason: `compensated: ${outcome.undone.join(", ")}`,
        patch: { error, releaseLease: true },
      });
      return true;
    case "compensation_failed": {
      const failure = new CompensationFailedError(
        `could not undo ${outcome.failed.join("; ")}${outcome.undone.length ? ` (undone: ${outcome.undone.join(", ")})` : ""}; the run had ended because ${why}. Undo the rest by hand`,
      );
      await deps.transition(compensating, {
        to: "FAILED",
        actor: deps.actor,
        reason: `COMPENSATION_FAILED: could not undo ${outcome.failed.join("; ")}`,
        patch: { error: { ...serializeError(failure), cause: error }, releaseLease: true },
      });
      return true;
    }
    case "needs_reconciliation":
      await deps.transition(compensating, {
        to: "NEEDS_RECONCILIATION",
        actor: deps.actor,
        reason: `EFFECT_UNRESOLVED while compensating: ${outcome.error.message.split("\n")[0]}`,
        patch: { error: outcome.error, releaseLease: true },
      });
      return true;
    case "stopped":
      await deps.stopped(compensating, outcome.reason);
      return true;
  }
}
