import type { AgentDefinition } from "../core/agent-definition.ts";
import type { EnvelopeOutcome } from "../core/envelope/envelope-outcome.ts";
import { LeaseLostError, RuntimeClosedError, StorageError, VersionMismatchError } from "../core/errors.ts";
import type { RunRecord, TransitionRecord, Versions } from "../core/records.ts";
import { serializeError } from "../core/serialize.ts";
import { claimedToStart } from "../core/telemetry/metrics.ts";
import { recordError } from "../core/telemetry/spans.ts";
import { carryOutStop, endCancelledHere, failUndrivable, recordOutcome } from "./execution-endings.ts";
import { endExecutionSpan, noteRunState, startExecutionSpan } from "./execution-span.ts";
import type { RunExecution } from "./run-execution.ts";
import { firstLine, handBack, startReason } from "./run-transitions.ts";

/**
 * The course of a claimed run: moved to RUNNING (unless the claim did), checked (its agent, a stop
 * asked meanwhile, its workflow version, a shutdown begun), then executed by envelopes until it
 * pauses or ends — replayed again when waits it paused on were resolved meanwhile.
 */

/**
 * Drives `execution`'s run; `recorded` is its RUNNING transition when the claim recorded it. A run
 * that cannot be driven on is dropped (its lease lapses, and recovery resumes it) or, when it would
 * fail the same way again, ended FAILED.
 */
export function driveRun(execution: RunExecution, recorded?: TransitionRecord): Promise<void> {
  const trace = startExecutionSpan(execution);
  execution.trace = trace;
  return executeRun(execution, recorded)
    .catch((error: unknown) => {
      recordError(trace.span, error);
      return dropped(execution, error);
    })
    .finally(() => endExecutionSpan(trace, execution.run));
}

/** A run whose execution threw: dropped (its lease lapses) or, when it would throw again, FAILED. */
function dropped(execution: RunExecution, error: unknown): Promise<void> | undefined {
  const { logger } = execution.scope.deps;
  const runId = execution.runId;
  if (error instanceof LeaseLostError || error instanceof RuntimeClosedError) {
    logger.warn({ runId }, `dropped run ${runId}: ${(error as Error).message}`);
  } else if (error instanceof StorageError) {
    // The store failed under the run (a database restart, a lost connection) and the run
    // could not be handed back (INTERRUPTED not recorded). Not an error of the run: its lease
    // is no longer renewed, and once it lapses any worker records INTERRUPTED and resumes the
    // run from what was committed. A commit that failed on a lost connection may have
    // committed or not; nothing here depends on which, recovery reads the run's row.
    logger.warn(
      { runId },
      `dropped run ${runId}: ${firstLine(error.message)}; it resumes from its checkpoints once its lease lapses`,
    );
  } else {
    // Not a crash: the store refused what the run wrote (it would refuse it again), or the
    // run could not be set up (a stored option its code cannot take). Ended visibly, with
    // the error, rather than left RUNNING or looping through recoveries.
    logger.error({ runId, error: serializeError(error) }, `run ${runId} could not be driven`);
    return failUndrivable(execution, error);
  }
  return undefined;
}

async function executeRun(execution: RunExecution, recorded?: TransitionRecord): Promise<void> {
  const claimed = execution.run;
  /** The state the run was claimed in (PENDING when the claim recorded its RUNNING transition). */
  const claimedIn = recorded?.from ?? claimed.state;
  if (claimedIn === "CANCELLING") {
    // Cancelled while paused or interrupted, or its worker was lost while cancelling: finish the
    // cancellation from the journal (what was cut off is settled first).
    await endCancelledHere(execution);
    return;
  }
  const { deps } = execution.scope;
  const agent = deps.agent(claimed.agent);
  if (recorded) {
    // The claim recorded PENDING -> RUNNING already (claimRuns with `start`).
    deps.onTransition(recorded, claimed);
  } else {
    execution.run = await execution.transition(claimed, {
      to: "RUNNING",
      actor: execution.actor,
      reason: `${startReason(execution.scope.workerId, claimed.state)}${policyChange(execution, claimed, agent)}`,
    });
  }
  if (!agent) {
    await failUnknownAgent(execution);
    return;
  }
  if (await endedBeforeStart(execution, agent)) return;
  // A run claimed in PENDING has never run: no step or wait can have been written (each is
  // written under a lease of a RUNNING run), so its first execution reads nothing; except a
  // fork, created with the journal it starts from.
  await executeWorkflow(execution, agent, claimedIn === "PENDING" && claimed.forkedFrom === undefined);
}

/**
 * Policies are checked on resume: a run that started under other policies goes on under the ones
 * in force now, and its move to RUNNING says so.
 */
function policyChange(execution: RunExecution, claimed: RunRecord, agent: AgentDefinition | undefined): string {
  if (claimed.state === "PENDING" || !agent) return "";
  const now = execution.scope.deps.versions(claimed.agent);
  const was = claimed.versions;
  let said = "";
  if (was.policy !== now.policy) {
    said += `; policies changed since the run started (${was.policy ?? "none"} -> ${now.policy ?? "none"}), the ones in force now apply to its next calls`;
  }
  // Sandbox and context: recorded since issue 24; a run started before has neither.
  for (const part of ["sandbox", "context"] as const) {
    if (was[part] !== undefined && was[part] !== now[part]) {
      said += `; ${part} changed since the run started (${was[part] ?? "none"} -> ${now[part] ?? "none"}), its next calls use the new one`;
    }
  }
  return said;
}

async function failUnknownAgent(execution: RunExecution): Promise<void> {
  const started = execution.run;
  await execution.transition(started, {
    to: "FAILED",
    actor: execution.actor,
    reason: `agent "${started.agent}" is not registered in this runtime`,
    patch: {
      error: {
        name: "UnknownNameError",
        code: "UNKNOWN_AGENT",
        message: `agent "${started.agent}" is not registered in this runtime; start the runtime with it in \`agents\``,
      },
      releaseLease: true,
    },
  });
}

/**
 * Ends, or hands back, a RUNNING run that must not execute here: a stop was asked meanwhile, its
 * workflow version is not this code's, or shutdown began. True when it did.
 */
async function endedBeforeStart(execution: RunExecution, agent: AgentDefinition): Promise<boolean> {
  const started = execution.run;
  if (started.stopRequest) {
    // Nothing executed here: what a lost worker cut off, or an operator reconciled while a
    // cancel was pending, is read from the journal.
    execution.stop = started.stopRequest;
    await carryOutStop(execution);
    return true;
  }
  const mismatch =
    versionMismatch(started, agent) ?? authorityMismatch(started, execution.scope.deps.versions(agent.name));
  if (mismatch) {
    await execution.transition(started, {
      to: "FAILED",
      actor: execution.actor,
      reason: `VERSION_MISMATCH: ${mismatch.message}`,
      patch: { error: serializeError(mismatch), releaseLease: true },
    });
    return true;
  }
  if (execution.scope.stopped()) {
    // Shutdown began while the run was being claimed or moved to RUNNING: no new work starts in a
    // process that is going away. Handed back at once, as the shutdown would after its grace.
    const { workerId } = execution.scope;
    await handBack(
      execution.scope.deps,
      workerId,
      started,
      `worker ${workerId} began shutting down before the run started; handed back`,
    );
    return true;
  }
  return false;
}

/** Executes the workflow until it pauses or ends; a pause whose waits were resolved meanwhile replays. */
async function executeWorkflow(execution: RunExecution, agent: AgentDefinition, fresh: boolean): Promise<void> {
  const started = execution.run;
  const { backend } = execution.scope.deps;
  let first = true;
  for (;;) {
    const [journal, waits] = fresh
      ? [[], []]
      : await Promise.all([backend.loadSteps(started.id), backend.loadWaits(started.id)]);
    fresh = false;
    const envelope = execution.envelopeFor(started, agent, journal, waits);
    execution.applyStop();
    if (first) claimedToStart(Date.now() - execution.claimedAt);
    first = false;
    const outcome: EnvelopeOutcome = await envelope.execute();
    // A workflow that returned before a stop reached it completes: the stop came too late, as
    // it would a moment later (and the results it returned ride with COMPLETED).
    if (execution.stop && outcome.kind !== "completed") {
      await carryOutStop(execution, envelope.inFlightAtCancel());
      return;
    }
    if (outcome.kind !== "paused") {
      await recordOutcome(execution, outcome);
      return;
    }
    if (await pause(execution, outcome)) return;
    // Some of its waits are resolved: replay and go on.
  }
}

/**
 * Records the pause (the run's waits with it), unless a stop was asked meanwhile (carried out) or
 * some of its waits were resolved meanwhile (false: the caller replays).
 */
async function pause(execution: RunExecution, outcome: Extract<EnvelopeOutcome, { kind: "paused" }>): Promise<boolean> {
  const started = execution.run;
  const { deps } = execution.scope;
  const result = await deps.backend.suspend({
    runId: started.id,
    epoch: started.epoch,
    waits: outcome.waits,
    blockedOn: outcome.blockedOn,
    pausedReason: outcome.pausedReason,
    actor: execution.actor,
    reason: outcome.reason,
    versions: deps.versions(started.agent),
    at: deps.clock.now(),
  });
  if (result.paused) {
    deps.onTransition(result.transition, result.run);
    noteRunState(execution.trace, result.run);
    for (const wait of outcome.waits) if (wait.dueAt !== null) execution.scope.armDue(wait.dueAt);
    return true;
  }
  if (result.stopRequest) {
    execution.stop = result.stopRequest;
    await carryOutStop(execution, []);
    return true;
  }
  return false;
}

/**
 * The error of a run started under another authority version than the one in force here (the
 * contract's invariant 4): it does not act under a mandate it was not started with. A run recorded
 * before authority versions were kept has none and is not checked.
 */
export function authorityMismatch(run: RunRecord, now: Versions): VersionMismatchError | undefined {
  const started = run.versions.authority;
  if (started === undefined || started === (now.authority ?? null)) return undefined;
  return new VersionMismatchError(
    `run ${run.id} started under authority ${started ?? "none"}, and this runtime acts under ${now.authority ?? "none"}; resume it from a runtime whose versions.authority is ${started ?? "unset"}`,
  );
}

/**
 * The error of a run started on a workflow version that this code neither is nor lists in
 * `compatibleVersions`, or undefined when the code accepts it.
 */
export function versionMismatch(run: RunRecord, agent: AgentDefinition): VersionMismatchError | undefined {
  const started = run.versions.workflow;
  if (started === agent.version || agent.compatibleVersions.includes(started)) return undefined;
  return new VersionMismatchError(
    `run ${run.id} started on version ${started} of agent "${agent.name}", and the deployed code is version ${agent.version}${
      agent.compatibleVersions.length ? ` (also runs ${agent.compatibleVersions.join(", ")})` : ""
    }; deploy code that runs version ${started} (branch with ctx.patched and list it in compatibleVersions), then resume the run`,
  );
}
