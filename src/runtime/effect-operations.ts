import {
  EffectNotFoundError,
  IllegalTransitionError,
  InvalidInputError,
  type SerializedError,
} from "../core/errors.ts";
import { type PendingCancel, pendingCancel } from "../core/pending-cancel.ts";
import type { Actor, EffectRecord, Json, RunRecord, StepRecord, StopRequest } from "../core/records.ts";
import { toJson } from "../core/serialize.ts";
import type { WaitOperationsHost } from "./wait-operations.ts";

/**
 * An operator's decision on an effect whose outcome is unknown (`reconcile`, DESIGN §5): one
 * transaction writes the decision on the effect's step and moves the run NEEDS_RECONCILIATION ->
 * RECONCILING; a worker then claims the run and replays it — an applied effect returns the
 * result given here without running, a not-applied one runs again under its retry policy.
 */

/** Options of `reconcile`. */
export interface ReconcileOptions {
  /** What the operator found out. */
  outcome: "applied" | "not_applied";
  /** For `applied`: the tool's result as the workflow should see it. @default null */
  result?: unknown;
  /** For `applied`: the proof (a bank reference, a ticket id). @default { reconciledBy } */
  receipt?: unknown;
  /** Who decided. @default { kind: "user", id: "local" } */
  by?: Actor | string;
  note?: string;
}

/** Records the decision and hands the run back to the workers. */
export async function reconcileEffect(
  host: WaitOperationsHost,
  runId: string,
  effectId: string,
  options: ReconcileOptions,
): Promise<RunRecord> {
  if (options?.outcome !== "applied" && options?.outcome !== "not_applied") {
    throw new InvalidInputError(
      `reconcile needs outcome "applied" or "not_applied" (got ${JSON.stringify(options?.outcome)}): say whether the effect happened`,
      [{ path: ["outcome"], message: 'expected "applied" or "not_applied"' }],
    );
  }
  const by: Actor =
    options.by === undefined
      ? { kind: "user", id: "local" }
      : typeof options.by === "string"
        ? { kind: "user", id: options.by }
        : options.by;
  const run = await host.getRun(runId);
  const steps = await host.backend.loadSteps(runId);
  const step = unknownEffect(steps, runId, effectId);
  if (run.state !== "NEEDS_RECONCILIATION") {
    throw new IllegalTransitionError(`run ${runId} is ${run.state}; reconcile acts on runs in NEEDS_RECONCILIATION`, {
      from: run.state,
      to: "RECONCILING",
    });
  }
  const at = host.now();
  const updated = decidedStep(host, step, `effect ${effectId} (run ${runId})`, options, by, at);
  // A cancel asked meanwhile waited for this decision: the worker carries it out next instead of
  // resuming the workflow, and the run's error says so until then (with the steps it cut off).
  const cancel = run.stopRequest?.kind === "cancel" ? run.stopRequest : undefined;
  const { run: moved, transition } = await host.backend.transition({
    runId,
    from: "NEEDS_RECONCILIATION",
    to: "RECONCILING",
    actor: by,
    reason: `effect ${effectId} (tool "${step.name}", key ${step.effect.idempotencyKey}) reconciled as ${options.outcome} by ${by.kind} ${by.id}${options.note ? `: ${options.note}` : ""}${cancel ? "; the pending cancel is carried out next" : ""}`,
    versions: host.versions(run),
    at,
    fence: { unowned: true, now: Date.now() },
    patch: {
      error: cancel
        ? cancelPendingError(
            run,
            cancel,
            steps,
            `effect ${effectId} reconciled as ${options.outcome} by ${by.kind} ${by.id}`,
          )
        : null,
    },
    steps: [updated],
  });
  host.emit([transition], moved);
  return moved;
}

/** The step of `effectId` in `steps`, whose outcome must be unknown; `EffectNotFoundError` otherwise. */
function unknownEffect(
  steps: readonly StepRecord[],
  runId: string,
  effectId: string,
): StepRecord & { effect: EffectRecord } {
  const step = steps.find((s) => s.effect?.id === effectId);
  const open = steps.filter((s) => s.effect?.status === "unknown").map((s) => s.effect?.id);
  if (!step?.effect) {
    throw new EffectNotFoundError(
      `run ${runId} has no effect ${JSON.stringify(effectId)}${open.length ? `; effects of unknown outcome: ${open.join(", ")}` : ""} (see cairn show ${runId})`,
    );
  }
  if (step.effect.status !== "unknown") {
    throw new EffectNotFoundError(
      `effect ${effectId} of run ${runId} is ${step.effect.status}, not of unknown outcome: there is nothing to reconcile${open.length ? `; effects of unknown outcome: ${open.join(", ")}` : ""}`,
    );
  }
  return step as StepRecord & { effect: EffectRecord };
}

/** The effect's step with the operator's decision on it: completed with `result`, or to run again. */
function decidedStep(
  host: WaitOperationsHost,
  step: StepRecord & { effect: EffectRecord },
  /** The effect and run, as an error names them. */
  which: string,
  options: ReconcileOptions,
  by: Actor,
  at: number,
): StepRecord {
  const label = `the reconciliation of ${which}`;
  const decision = { outcome: options.outcome, by, at, ...(options.note ? { note: options.note } : {}) };
  if (options.outcome === "applied") {
    const result = toJson(options.result ?? null, `the result given to ${label}`, host.maxPayloadBytes) ?? null;
    const receipt: Json =
      toJson(options.receipt ?? { reconciledBy: by.id }, `the receipt given to ${label}`, host.maxPayloadBytes) ?? null;
    return {
      ...step,
      status: "completed",
      result,
      endedAt: at,
      effect: {
        ...step.effect,
        status: "applied",
        receipt,
        settledBy: "reconcile",
        settledAt: at,
        unknown: undefined,
        reconciliation: decision,
      },
    };
  }
  return {
    ...step,
    effect: {
      ...step.effect,
      status: "not_applied",
      settledBy: "reconcile",
      settledAt: at,
      unknown: undefined,
      reconciliation: decision,
    },
  };
}

/**
 * The error of a RECONCILING run whose cancel is pending: the cancel as it was asked, and the
 * steps that were in flight then (recorded when it began, else those still cut off: started steps
 * other than waits, the effect just decided among them).
 */
function cancelPendingError(
  run: RunRecord,
  request: StopRequest,
  steps: readonly StepRecord[],
  decided: string,
): SerializedError {
  const known = pendingCancel(run.error);
  const cancel: PendingCancel = {
    by: known?.by ?? request.by.id,
    reason: known?.reason ?? request.reason,
    inFlight: known?.inFlight ?? steps.filter((s) => s.status === "started" && s.kind !== "wait").map((s) => s.seq),
  };
  return {
    name: "CancelledError",
    code: "CANCELLED",
    message: `cancel pending (asked by ${request.by.kind} ${request.by.id}: ${request.reason}); ${decided}, and a worker carries the cancel out next, settling any other effect of open outcome first`,
    data: { cancel },
  };
}
