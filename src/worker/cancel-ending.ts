import type { TransitionRequest } from "../backend/backend.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
import { settleForCancel, withSteps } from "../core/cancel-settlement.ts";
import type { InFlightStep } from "../core/envelope/envelope-outcome.ts";
import type { SerializedError } from "../core/errors.ts";
import type { PendingCancel } from "../core/pending-cancel.ts";
import type { Actor, RunRecord, StepRecord, StopRequest } from "../core/records.ts";
import { storableError } from "../core/serialize.ts";
import { type CancellationEvidence, cancellationEvidence, cutOffSteps } from "./cancellation-evidence.ts";
import { type CompensationDeps, compensateMode, compensateRun } from "./compensation.ts";

/**
 * The end of a cancelled run (DESIGN §4): CANCELLING -> CANCELLED with the evidence of where it
 * stopped — or COMPENSATING first, under `on_failure_or_cancel` — once no effect's outcome is
 * open. Effects whose outcome the cancel left open are settled first (`settleForCancel`); one
 * that stays unknown holds the run in NEEDS_RECONCILIATION with the cancel pending, and the
 * operator's `reconcile` lets a worker finish the cancel here instead of resuming the workflow.
 */

/** What {@link endCancelled} needs from the worker. */
export interface CancelEndingDeps {
  actor: Actor;
  /** The run's agent in this process, if it has it. */
  agent: AgentDefinition | undefined;
  loadSteps(runId: string): Promise<StepRecord[]>;
  /** Writes a transition of the run (fenced by its epoch) and returns the run after it. */
  transition(
    run: RunRecord,
    change: Pick<TransitionRequest, "to" | "actor" | "reason" | "patch" | "steps">,
  ): Promise<RunRecord>;
  /** What compensating the run needs (only asked for under `on_failure_or_cancel`). */
  compensation(agent: AgentDefinition): CompensationDeps;
  now(): number;
  maxPayloadBytes: number;
  /** How long a status query gets (the worker's cancel grace). */
  graceMs: number;
}

/**
 * Ends `run` (CANCELLING, held by this worker). `inFlight` is what the execution here had in
 * flight when the cancel began; without it the run did not execute here, and the steps cut off
 * are read from its journal.
 */
export async function endCancelled(
  deps: CancelEndingDeps,
  run: RunRecord,
  request: StopRequest | undefined,
  inFlight?: readonly InFlightStep[],
): Promise<void> {
  const stored = await deps.loadSteps(run.id);
  const running = new Set((inFlight ?? []).map((s) => s.seq));
  const settled = await settleForCancel({
    runId: run.id,
    agent: deps.agent,
    journal: stored,
    // Right after an execution here, an effect its own query found unknown is not asked again.
    askUnknown: inFlight === undefined,
    cutOff: (step) =>
      running.has(step.seq)
        ? {
            name: "AttemptAbandoned",
            message: `still running when the cancel grace of ${deps.graceMs} ms ran out: the tool did not stop on its abort signal`,
          }
        : { name: "AttemptInterrupted", message: "the process running this attempt stopped before it ended" },
    now: deps.now,
    maxPayloadBytes: deps.maxPayloadBytes,
    timeoutMs: deps.graceMs,
    signal: new AbortController().signal,
  });
  const journal = withSteps(stored, settled);
  const evidence = cancellationEvidence([...(inFlight ?? cutOffSteps(stored, run)), ...settled], journal);
  const by = request?.by ?? { kind: "system", id: deps.actor.id };
  const asked = `${by.kind} ${by.id}${request ? `: ${request.reason}` : ""}`;
  const steps = settled.length > 0 ? { steps: settled } : {};
  const unknown = journal.filter((s) => s.effect?.status === "unknown");
  if (unknown.length > 0) {
    await deps.transition(run, {
      to: "NEEDS_RECONCILIATION",
      actor: deps.actor,
      reason: `EFFECT_UNRESOLVED: cancel pending (asked by ${asked}) until ${unknown.map((s) => s.effect?.id).join(", ")} is reconciled; ${evidence.summary}`,
      patch: { error: storableError(unresolvedError(run, unknown, by, request, evidence)), releaseLease: true },
      ...steps,
    });
    return;
  }
  const error: SerializedError = storableError({
    name: "CancelledError",
    code: "CANCELLED",
    message: `cancelled by ${asked}; ${evidence.summary}`,
    data: { by: by.id, reason: request?.reason ?? null, stopped: evidence.stopped, inFlight: evidence.inFlight },
  });
  const agent = deps.agent;
  if (agent && compensateMode(run, agent) === "on_failure_or_cancel") {
    if (await compensateRun(deps.compensation(agent), run, error.message, error, settled)) return;
  }
  await deps.transition(run, {
    to: "CANCELLED",
    actor: deps.actor,
    reason: `cancelled by ${asked}; ${evidence.summary}`,
    patch: { error, releaseLease: true },
    ...steps,
  });
}

/** The error of a run whose cancel waits for an operator: each unknown effect and the pending cancel. */
function unresolvedError(
  run: RunRecord,
  unknown: readonly StepRecord[],
  by: Actor,
  request: StopRequest | undefined,
  evidence: CancellationEvidence,
): SerializedError {
  const ids = unknown.map((s) => s.effect?.id ?? `e${s.seq}`);
  const each = unknown
    .map(
      (s) =>
        `effect ${s.effect?.id} (tool "${s.name}", key ${s.effect?.idempotencyKey}) is unknown: ${s.effect?.unknown}`,
    )
    .join("; ");
  const cancel: PendingCancel = {
    by: by.id,
    reason: request?.reason ?? null,
    inFlight: (evidence.inFlight as { seq: number }[]).map((s) => s.seq),
  };
  return {
    name: "EffectUnresolvedError",
    code: "EFFECT_UNRESOLVED",
    message: `a cancel is pending (asked by ${by.kind} ${by.id}${request ? `: ${request.reason}` : ""}), and the outcome of ${each}. Find out whether it happened, then: ${ids
      .map((id) => `cairn reconcile ${run.id} ${id} --outcome applied|not_applied`)
      .join("; ")}; the run then ends CANCELLED instead of going on`,
    retryable: false,
    data: { effectId: ids[0], effectIds: ids, cancel },
  };
}
