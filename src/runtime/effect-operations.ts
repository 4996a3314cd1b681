import { EffectNotFoundError, IllegalTransitionError, InvalidInputError } from "../core/errors.ts";
import type { Actor, Json, RunRecord, StepRecord } from "../core/records.ts";
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
  if (run.state !== "NEEDS_RECONCILIATION") {
    throw new IllegalTransitionError(`run ${runId} is ${run.state}; reconcile acts on runs in NEEDS_RECONCILIATION`, {
      from: run.state,
      to: "RECONCILING",
    });
  }
  const at = host.now();
  const label = `the reconciliation of effect ${effectId} (run ${runId})`;
  const decision = { outcome: options.outcome, by, at, ...(options.note ? { note: options.note } : {}) };
  let updated: StepRecord;
  if (options.outcome === "applied") {
    const result = toJson(options.result ?? null, `the result given to ${label}`, host.maxPayloadBytes) ?? null;
    const receipt: Json =
      toJson(options.receipt ?? { reconciledBy: by.id }, `the receipt given to ${label}`, host.maxPayloadBytes) ?? null;
    updated = {
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
  } else {
    updated = {
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
  const { run: moved, transition } = await host.backend.transition({
    runId,
    from: "NEEDS_RECONCILIATION",
    to: "RECONCILING",
    actor: by,
    reason: `effect ${effectId} (tool "${step.name}", key ${step.effect.idempotencyKey}) reconciled as ${options.outcome} by ${by.kind} ${by.id}${options.note ? `: ${options.note}` : ""}`,
    versions: host.versions(run),
    at,
    fence: { unowned: true, now: Date.now() },
    patch: { error: null },
    steps: [updated],
  });
  host.emit([transition], moved);
  return moved;
}
