import type { AgentDefinition } from "../core/agent-definition.ts";
import type { EnvelopeOutcome, InFlightStep } from "../core/envelope/envelope-outcome.ts";
import type { WorkflowEnvelope } from "../core/envelope/workflow-envelope.ts";
import { LeaseLostError, RuntimeClosedError, type SerializedError, StorageRejectedError } from "../core/errors.ts";
import { runFlowOf } from "../core/flow-control.ts";
import type { Json, StopRequest } from "../core/records.ts";
import { OWNED_STATES } from "../core/run-state.ts";
import { serializeError, storableError } from "../core/serialize.ts";
import { endCancelled } from "./cancel-ending.ts";
import { type CompensationDeps, compensateMode, compensateRun } from "./compensation.ts";
import type { RunExecution } from "./run-execution.ts";
import { firstLine } from "./run-transitions.ts";

/**
 * How an execution's run ends: the outcome of its workflow recorded (compensated first where its
 * mode says so), a stop carried out (suspended, or cancelled with what was in flight), or — for a
 * run that cannot be driven on — FAILED with the error that stopped it.
 */

/** Error codes that end a run BLOCKED (governance) rather than FAILED. */
const GOVERNANCE_CODES: ReadonlySet<string> = new Set([
  "APPROVAL_DENIED",
  "APPROVAL_EXPIRED",
  "POLICY_DENIED",
  "BUDGET_EXCEEDED",
]);

type Ended = Exclude<EnvelopeOutcome, { kind: "paused" }>;

/** Records how an execution ended (anything but a pause). */
export async function recordOutcome(execution: RunExecution, outcome: Ended): Promise<void> {
  const run = execution.run;
  const actor = execution.actor;
  switch (outcome.kind) {
    case "stopped":
      return recordStopped(execution, outcome.reason);
    case "continued":
      return continueAsNew(execution, outcome.input);
    case "needs_reconciliation":
      await execution.transition(run, {
        to: "NEEDS_RECONCILIATION",
        actor,
        reason: `EFFECT_UNRESOLVED: ${firstLine(outcome.error.message)}`,
        patch: { error: outcome.error, releaseLease: true },
      });
      return;
    case "completed":
      await execution.transition(run, {
        to: "COMPLETED",
        actor,
        reason: "workflow returned",
        patch: { output: outcome.output, releaseLease: true },
        ...(outcome.steps?.length ? { steps: outcome.steps } : {}),
      });
      return;
    case "failed":
      return recordFailure(execution, outcome.error);
  }
}

/** An envelope that stopped: the run is someone else's, shutdown hands it back, or a write failed. */
async function recordStopped(execution: RunExecution, reason: unknown): Promise<void> {
  // Lease lost: the run is someone else's. Shutdown: `shutdown()` records INTERRUPTED itself.
  if (reason instanceof LeaseLostError) {
    execution.scope.deps.logger.warn({ runId: execution.runId }, `dropped run ${execution.runId}: ${reason.message}`);
    return;
  }
  if (reason instanceof RuntimeClosedError) return;
  // The store refused a value the run wrote: replaying would write it again. Not a lost worker.
  if (reason instanceof StorageRejectedError) throw reason;
  // A journal write failed (the envelope stopped itself): hand the run back at once rather
  // than leave it RUNNING under a live lease; recovery resumes it, within its bound.
  const why = reason instanceof Error ? reason.message : String(reason);
  await execution.transition(execution.run, {
    to: "INTERRUPTED",
    actor: execution.actor,
    reason: `worker ${execution.scope.workerId} stopped the run: a journal write failed (${firstLine(why)})`,
    patch: { releaseLease: true },
  });
}

/** `ctx.continueAsNew`: the run completes, and its successor is created with the same transition. */
async function continueAsNew(execution: RunExecution, input: Json): Promise<void> {
  const run = execution.run;
  const actor = execution.actor;
  const { deps } = execution.scope;
  const successor = deps.newRunId();
  await execution.transition(run, {
    to: "COMPLETED",
    actor,
    reason: `continued as new run ${successor}`,
    patch: { output: { continuedAs: successor }, releaseLease: true },
    successor: {
      id: successor,
      agent: run.agent,
      workflow: run.workflow,
      key: run.key,
      input,
      versions: deps.versions(run.agent),
      meta: run.meta,
      actor,
      reason: `continues run ${run.id}`,
      at: Date.now(),
      parentRunId: run.parentRunId,
      parentClosePolicy: run.parentClosePolicy,
      // Its key, limit and priority: the run it continues gives its slot back in this transaction.
      flow: runFlowOf(run),
    },
  });
  execution.scope.poke();
}

/** A workflow that threw: FAILED, or BLOCKED by governance — compensated first where its mode says so. */
async function recordFailure(execution: RunExecution, error: SerializedError): Promise<void> {
  const run = execution.run;
  // A denied or expired approval the workflow did not handle stops the run by governance.
  const code = error.code;
  const blocked = GOVERNANCE_CODES.has(code ?? "");
  const agent = execution.scope.deps.agent(run.agent);
  if (agent && compensateMode(run, agent) !== "never") {
    const why = `the workflow ${blocked ? "was blocked" : "failed"} (${code ?? error.name}: ${firstLine(error.message)})`;
    if (await compensateRun(compensationOf(execution, agent), run, why, error)) return;
  }
  await execution.transition(run, {
    to: blocked ? "BLOCKED" : "FAILED",
    actor: execution.actor,
    reason: code ? `${code}: ${firstLine(error.message)}` : `workflow threw ${error.name}: ${firstLine(error.message)}`,
    patch: { error, releaseLease: true },
  });
}

/** What compensating `execution`'s run needs from this worker. */
function compensationOf(execution: RunExecution, agent: AgentDefinition): CompensationDeps {
  return {
    actor: execution.actor,
    loadSteps: (runId) => execution.scope.deps.backend.loadSteps(runId),
    transition: async (run, change) => {
      execution.run = await execution.transition(run, change);
      return execution.run;
    },
    envelope: (run, journal) => execution.envelopeFor(run, agent, journal),
    stopped: async (run, reason) => {
      execution.run = run;
      await recordOutcome(execution, { kind: "stopped", reason });
    },
  };
}

/**
 * Carries out `execution.stop` on a run this worker holds in RUNNING. `inFlight`: what the
 * execution here had in flight when the cancel reached it; undefined when nothing executed here.
 */
export async function carryOutStop(execution: RunExecution, inFlight?: readonly InFlightStep[]): Promise<void> {
  const request = execution.stop as StopRequest;
  // What finished is committed before the run leaves this worker.
  await execution.envelope?.flushJournal().catch(() => {});
  if (request.kind === "suspend") {
    await execution.transition(execution.run, {
      to: "PAUSED",
      pausedReason: "suspended_orphan",
      actor: request.by,
      reason: `${request.reason}; waits for resume or cancel`,
      patch: { releaseLease: true },
    });
    return;
  }
  execution.run = await execution.transition(execution.run, {
    to: "CANCELLING",
    actor: request.by,
    reason: `cancel requested by ${request.by.kind} ${request.by.id}: ${request.reason}`,
  });
  await endCancelledHere(execution, inFlight);
}

/**
 * CANCELLING -> CANCELLED, with what was in flight and where the run stopped — or, for a run
 * that compensates on cancellation and has applied effects, COMPENSATING and on; or, while an
 * effect's outcome stays unknown, NEEDS_RECONCILIATION with the cancel pending (`endCancelled`).
 */
export async function endCancelledHere(execution: RunExecution, inFlight?: readonly InFlightStep[]): Promise<void> {
  const run = execution.run;
  const { deps, settings } = execution.scope;
  const agent = deps.agent(run.agent);
  const host = deps.host(run, () => execution.envelope as WorkflowEnvelope);
  await endCancelled(
    {
      actor: execution.actor,
      agent,
      loadSteps: (runId) => deps.backend.loadSteps(runId),
      transition: async (from, change) => {
        execution.run = await execution.transition(from, change);
        return execution.run;
      },
      compensation: (own) => compensationOf(execution, own),
      now: () => host.now(),
      maxPayloadBytes: host.maxPayloadBytes,
      graceMs: settings.cancelGraceMs,
    },
    run,
    run.stopRequest ?? execution.stop,
    inFlight,
  );
}

/**
 * Ends a run this worker holds that it cannot drive on (see `driveRun`): FAILED with `error`, or
 * CANCELLED when it was being cancelled. Its error is made storable first; if the store refuses
 * even that, a plain one naming the error's class is recorded instead.
 */
export async function failUndrivable(execution: RunExecution, error: unknown): Promise<void> {
  const { deps, workerId } = execution.scope;
  const current = await deps.backend.getRun(execution.runId).catch(() => undefined);
  if (!current || current.epoch !== execution.run.epoch || current.leaseOwner !== workerId) return;
  if (!OWNED_STATES.has(current.state)) return;
  const serialized = storableError(serializeError(error));
  const to = current.state === "CANCELLING" ? "CANCELLED" : "FAILED";
  const reason = `${serialized.code ?? serialized.name}: ${firstLine(serialized.message)}`;
  const write = (err: SerializedError) =>
    execution.transition(current, { to, actor: execution.actor, reason, patch: { error: err, releaseLease: true } });
  try {
    await write(serialized);
  } catch (again) {
    if (!(again instanceof StorageRejectedError)) {
      deps.logger.error({ runId: current.id, error: String(again) }, `run ${current.id} could not be ended ${to}`);
      return;
    }
    await write({ name: serialized.name, code: serialized.code ?? "STORAGE_REJECTED", message: reason }).catch(
      (last: unknown) =>
        deps.logger.error({ runId: current.id, error: String(last) }, `run ${current.id} could not be ended ${to}`),
    );
  }
}
