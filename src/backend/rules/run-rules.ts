import { AlreadyDecidedError, RunNotCompletedError, RunNotFoundError } from "../../core/errors.ts";
import type { AcceptanceRecord, RunRecord, TransitionRecord } from "../../core/records.ts";
import { storableText } from "../../core/text.ts";
import type { CreateRunInput } from "../contract/run-store.ts";

/** The rules of a new run and of an operator's verdict, shared by every backend. */

/** A new run in PENDING and its first transition (id 1, from null), as every backend stores them. */
export function pendingRun(input: CreateRunInput): { run: RunRecord; transition: TransitionRecord } {
  const run: RunRecord = {
    id: input.id,
    agent: input.agent,
    workflow: input.workflow,
    key: input.key,
    state: "PENDING",
    pausedReason: null,
    input: input.input,
    output: undefined,
    error: undefined,
    epoch: 0,
    leaseOwner: null,
    leaseExpiresAt: null,
    recoveries: 0,
    lastTransitionId: 1,
    versions: input.versions,
    meta: input.meta,
    parentRunId: input.parentRunId ?? null,
    parentClosePolicy: input.parentClosePolicy ?? (input.parentRunId ? "suspend" : null),
    stopRequest: undefined,
    continuedFrom: null,
    continuedTo: null,
    usage: undefined,
    acceptance: undefined,
    ...(input.flow?.concurrencyKey === undefined
      ? {}
      : { concurrencyKey: input.flow.concurrencyKey, concurrencyLimit: input.flow.concurrencyLimit }),
    ...(input.flow?.priority ? { priority: input.flow.priority } : {}),
    createdAt: input.at,
    updatedAt: input.at,
  };
  const transition: TransitionRecord = {
    runId: run.id,
    id: 1,
    at: input.at,
    actor: input.actor,
    from: null,
    to: "PENDING",
    pausedReason: null,
    reason: storableText(input.reason),
    versions: input.versions,
  };
  return { run, transition };
}

/**
 * The rule of `recordAcceptance`, shared by every backend: called inside the backend's transaction
 * with the run as stored now, it refuses an unknown run (`RunNotFoundError`), a run that is not
 * COMPLETED (`RunNotCompletedError`) and a run that has a verdict already (`AlreadyDecidedError`),
 * and otherwise returns the run with `acceptance` set. Nothing else changes: it is not a
 * transition (no transition row; state, `lastTransitionId` and `updatedAt` stay as they are).
 */
export function applyAcceptance(run: RunRecord | undefined, runId: string, acceptance: AcceptanceRecord): RunRecord {
  if (!run) throw new RunNotFoundError(`no run with id "${runId}"; list runs with \`cairn runs\``);
  const verb = acceptance.decision === "accepted" ? "accept" : "reject";
  if (run.state !== "COMPLETED") {
    throw new RunNotCompletedError(
      `cannot ${verb} run ${run.id}: it is ${run.state}, and accept/reject need a COMPLETED run`,
    );
  }
  if (run.acceptance) {
    const prior = run.acceptance;
    throw new AlreadyDecidedError(
      `cannot ${verb} run ${run.id}: it was already ${prior.decision} by ${prior.by.kind} ${prior.by.id} at ${new Date(prior.at).toISOString()}${prior.note ? ` ("${prior.note}")` : ""}; a run gets one verdict`,
    );
  }
  return { ...run, acceptance };
}
