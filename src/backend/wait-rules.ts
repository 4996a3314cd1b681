import {
  LeaseLostError,
  RunNotFoundError,
  RunNotOpenError,
  SignalInboxFullError,
  WaitClosedError,
  WaitNotFoundError,
} from "../core/errors.ts";
import { withPendingCancel } from "../core/pending-cancel.ts";
import type {
  RunRecord,
  SignalRecord,
  StopRequest,
  TransitionRecord,
  Versions,
  WaitRecord,
  WaitResolution,
} from "../core/records.ts";
import { isTerminal } from "../core/run-state.ts";
import { describeWait } from "../core/wait-steps.ts";
import type {
  CreateRunInput,
  ResolveWaitRequest,
  SignalRequest,
  StopRunRequest,
  SuspendRequest,
  SuspendResult,
  TransitionRequest,
} from "./backend.ts";
import { childEnding, dueResolution, hasEnded, Plan, resolveInPlan, SYSTEM } from "./plan.ts";
import { applyTransition, pendingRun, wakeFor } from "./transition-rules.ts";

export { childEnding, dueResolution, hasEnded, Plan } from "./plan.ts";

/**
 * The rules of waits, signals, stops and run endings, shared by every backend so they agree
 * exactly (like `transition-rules.ts`). Each `plan…` function is pure: the backend loads, inside
 * its transaction, the rows the function names, calls it, and writes the {@link Plan} it
 * returns — every run, transition, wait and signal in it — in the same transaction, then sends
 * the plan's wake-ups after the commit. `Plan` and the moves the planners share are in `plan.ts`.
 */

/**
 * `suspend`: the backend loads the run, every stored wait of the run, its unconsumed signals
 * (oldest first) and the child runs its blocked child waits name (`childRunIds`).
 */
export function planSuspend(input: {
  run: RunRecord;
  request: SuspendRequest;
  stored: readonly WaitRecord[];
  inbox: readonly SignalRecord[];
  children: readonly RunRecord[];
}): { plan: Plan; result: SuspendResult | undefined } {
  const { run, request } = input;
  const plan = new Plan();
  if (run.epoch !== request.epoch) {
    throw new LeaseLostError(
      `run ${run.id}: pause under lease epoch ${request.epoch} refused, the run is at epoch ${run.epoch}; this worker lost the run`,
    );
  }
  const waits = new Map(input.stored.map((w) => [w.id, w]));
  for (const wait of request.waits) {
    if (!waits.has(wait.id)) {
      waits.set(wait.id, wait);
      plan.wait(wait);
    }
  }
  const inbox = input.inbox.filter((s) => s.consumedBy === null);
  const resolved: WaitRecord[] = [];
  for (const id of request.blockedOn) {
    const wait = waits.get(id);
    if (!wait) continue;
    if (wait.status === "resolved") {
      resolved.push(wait);
      continue;
    }
    if (wait.status !== "open") continue;
    const resolution = resolveNow(wait, inbox, input.children, request.at, plan);
    if (resolution) {
      const done: WaitRecord = { ...wait, status: "resolved", resolution };
      plan.wait(done);
      resolved.push(done);
    }
  }
  if (resolved.length > 0 || run.stopRequest) {
    return { plan, result: { paused: false, resolved, stopRequest: run.stopRequest } };
  }
  const paused = plan.transition(run, {
    to: "PAUSED",
    pausedReason: request.pausedReason,
    actor: request.actor,
    reason: request.reason,
    versions: request.versions,
    at: request.at,
    fence: { epoch: request.epoch },
    patch: { releaseLease: true },
  });
  const transition = plan.transitions.at(-1) as TransitionRecord;
  return { plan, result: { paused: true, run: paused, transition } };
}

/** A wait that can be resolved without anyone acting: due, a signal already in, a child ended. */
function resolveNow(
  wait: WaitRecord,
  inbox: SignalRecord[],
  children: readonly RunRecord[],
  now: number,
  plan: Plan,
): WaitResolution | undefined {
  if (wait.kind === "signal") {
    const i = inbox.findIndex((s) => s.name === wait.name);
    const signal = inbox[i];
    if (signal) {
      inbox.splice(i, 1);
      plan.signals.push({ ...signal, consumedBy: wait.id });
      return { outcome: "signalled", value: signal.payload, messageId: signal.messageId, at: now };
    }
  }
  if (wait.kind === "child") {
    const child = children.find((c) => c.id === wait.name);
    if (child && hasEnded(child.state)) return { outcome: "child_ended", value: childEnding(child), at: now };
  }
  if (wait.dueAt !== null && wait.dueAt <= now) return dueResolution(wait, now);
  return undefined;
}

/** `resolveWait`: the backend loads the run and the wait (undefined when there is none). */
export function planResolveWait(input: {
  run: RunRecord | undefined;
  wait: WaitRecord | undefined;
  request: ResolveWaitRequest;
}): { plan: Plan; wait: WaitRecord; run: RunRecord; transition: TransitionRecord | undefined } {
  const { run, wait, request } = input;
  if (!run) throw new WaitNotFoundError(`no run with id "${request.runId}"`);
  if (!wait) {
    throw new WaitNotFoundError(
      `run ${request.runId} has no wait "${request.waitId}"; \`cairn show ${request.runId}\` lists its waits`,
    );
  }
  if (wait.status !== "open") {
    const r = wait.resolution;
    throw new WaitClosedError(
      `${describeWait(wait)} of run ${run.id} is no longer open: ${r ? `${r.outcome}${r.by ? ` by ${r.by.id}` : ""} at ${new Date(r.at).toISOString()}` : wait.status}`,
    );
  }
  const decision = request.decide(wait, run);
  const plan = new Plan();
  const resolved = resolveInPlan(
    plan,
    run,
    wait,
    { ...decision, at: request.at },
    {
      actor: request.actor,
      reason: request.reason,
      versions: request.versions,
    },
  );
  return { plan, wait: resolved, run: plan.current(run), transition: plan.transitions[0] };
}

/**
 * The wait a signal resolves: the oldest open wait of its name whose timeout has not passed (a
 * wait whose timeout passed is timed out, even before a worker recorded it so), else undefined.
 */
export function signalTarget(openWaits: readonly WaitRecord[], request: SignalRequest): WaitRecord | undefined {
  return openWaits
    .filter(
      (w) =>
        w.status === "open" &&
        w.kind === "signal" &&
        w.name === request.name &&
        (w.dueAt === null || w.dueAt > request.at),
    )
    .sort((a, b) => a.seq - b.seq || (a.id < b.id ? -1 : 1))[0];
}

/**
 * `deliverSignal`: the backend loads the run, the inbox entry with the same message id (if any)
 * and the run's open waits of kind `signal` with this name; and, when `request.maxUnread` is set,
 * no entry has the message id and no open wait takes the signal ({@link signalTarget}), the
 * number of the run's unread signals (`unread`). A signal that would go to an inbox holding
 * `maxUnread` unread ones is refused (`SignalInboxFullError`, nothing written); a repeat of a
 * stored one is still acknowledged, and a signal a wait takes is always delivered.
 */
export function planSignal(input: {
  run: RunRecord | undefined;
  request: SignalRequest;
  existing: SignalRecord | undefined;
  openWaits: readonly WaitRecord[];
  unread?: number | undefined;
}): {
  plan: Plan;
  duplicate: boolean;
  signal: SignalRecord;
  deliveredTo: string | null;
  run: RunRecord;
  transition: TransitionRecord | undefined;
} {
  const { run, request } = input;
  const plan = new Plan();
  if (!run) throw new RunNotFoundError(`no run with id "${request.runId}"; list runs with \`cairn runs\``);
  if (input.existing) {
    return {
      plan,
      duplicate: true,
      signal: input.existing,
      deliveredTo: input.existing.consumedBy,
      run,
      transition: undefined,
    };
  }
  // An INTERRUPTED run is resumed and may wait for the signal later: it keeps it in its inbox.
  if (hasEnded(run.state)) {
    throw new RunNotOpenError(`run ${run.id} is ${run.state}; it takes no more signals`);
  }
  const wait = signalTarget(input.openWaits, request);
  if (!wait && request.maxUnread !== undefined) {
    if (input.unread === undefined) throw new RangeError("planSignal needs the run's unread count to check maxUnread");
    if (input.unread >= request.maxUnread) {
      throw new SignalInboxFullError(
        `run ${run.id}'s inbox holds ${input.unread} signals it has not read, its limit (maxUnreadSignals ${request.maxUnread}): signal "${request.name}" was not stored. A run reads a signal when it waits for one of its name (ctx.waitForSignal); send what it waits for, or cancel it. A workflow that takes a stream of signals should read each as it comes and carry its state over with ctx.continueAsNew(state) now and then; or raise the runtime's maxUnreadSignals`,
        { unread: input.unread, limit: request.maxUnread },
      );
    }
  }
  const signal: SignalRecord = {
    runId: run.id,
    messageId: request.messageId,
    name: request.name,
    payload: request.payload,
    receivedAt: request.at,
    consumedBy: wait ? wait.id : null,
  };
  plan.signals.push(signal);
  if (wait) {
    resolveInPlan(
      plan,
      run,
      wait,
      { outcome: "signalled", value: request.payload, messageId: request.messageId, by: request.actor, at: request.at },
      { actor: request.actor, reason: `signal "${request.name}" received (${wait.id})`, versions: request.versions },
    );
  }
  return {
    plan,
    duplicate: false,
    signal,
    deliveredTo: wait ? wait.id : null,
    run: plan.current(run),
    transition: plan.transitions[0],
  };
}

/** `fireDueWaits`, for one run: the backend loads the run and its open waits due at `now`. */
export function planDue(input: { run: RunRecord; due: readonly WaitRecord[]; now: number; versions: Versions }): {
  plan: Plan;
  resolved: WaitRecord[];
} {
  const plan = new Plan();
  const resolved: WaitRecord[] = [];
  for (const wait of input.due) {
    if (wait.status !== "open" || wait.dueAt === null || wait.dueAt > input.now) continue;
    const resolution = dueResolution(wait, input.now);
    resolved.push(
      resolveInPlan(plan, input.run, wait, resolution, {
        actor: SYSTEM,
        reason: `${describeWait(wait)} ${resolution.outcome.replace("_", " ")}`,
        versions: input.versions,
      }),
    );
  }
  return { plan, resolved };
}

/** The note on a child wait that the sweep resolved (see {@link planChildSweep}). */
export const SWEPT_NOTE = "found open by the sweep of child waits after the child had ended";

/**
 * The sweep of child waits (`resolveEndedChildWaits`), for one run: the backend loads the run
 * (locked), its open child waits and the child runs they name. A child's end resolves its
 * parent's wait in the same transaction (`planEnd`); a wait still open once its child has ended
 * was missed (a race, a store that lost the write), and nothing else would ever resolve it. Each
 * such wait is resolved here as the child's end would have resolved it, with a note saying the
 * sweep found it, and a PAUSED run goes RESUMING (one transition however many waits), its reason
 * naming the child. A run that has ended keeps its waits as its end left them; a wait whose child
 * has not ended (INTERRUPTED included: it is resumed) or does not exist is left open.
 */
export function planChildSweep(input: {
  run: RunRecord;
  waits: readonly WaitRecord[];
  children: readonly RunRecord[];
  at: number;
}): { plan: Plan; resolved: WaitRecord[] } {
  const { run, at } = input;
  const plan = new Plan();
  const resolved: WaitRecord[] = [];
  if (hasEnded(run.state)) return { plan, resolved };
  const waits = input.waits
    .filter((w) => w.runId === run.id && w.kind === "child" && w.status === "open")
    .sort((a, b) => a.seq - b.seq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  for (const wait of waits) {
    const child = input.children.find((c) => c.id === wait.name);
    if (!child || !hasEnded(child.state)) continue;
    resolved.push(
      resolveInPlan(
        plan,
        run,
        wait,
        { outcome: "child_ended", value: childEnding(child), note: SWEPT_NOTE, at },
        {
          actor: SYSTEM,
          reason: `child run ${child.id} ended ${child.state}; its wait ${wait.id} was still open, resolved by the sweep of child waits`,
          versions: run.versions,
        },
      ),
    );
  }
  return { plan, resolved };
}

/** What `planEnd` needs besides the ended run and the plan: see {@link planEnd}. */
export interface EndContext {
  openWaits: readonly WaitRecord[];
  parent: RunRecord | undefined;
  parentWait: WaitRecord | undefined;
  children: readonly RunRecord[];
}

/**
 * `requestStop`: the backend loads the run. A terminal run is left as it is; a PENDING run is
 * cancelled at once; a PAUSED or INTERRUPTED run moves to where a worker carries the request out
 * (CANCELLING, or RESUMING to be suspended); a run a worker holds keeps the request for it — so
 * does any run under a live lease (a PENDING run claimed but not started yet) and a
 * NEEDS_RECONCILIATION run, whose cancel waits for the operator's `reconcile` (an effect's outcome
 * is unknown: the run must not end as if it were known). Nothing but the run is needed: the one
 * run a stop ends at once, a top-level PENDING run, has no waits, no parent and no children.
 */
export function planStop(input: { run: RunRecord | undefined; request: StopRunRequest }): Plan {
  const plan = new Plan();
  if (!input.run) throw new RunNotFoundError(`no run with id "${input.request.runId}"`);
  // A child cancelled on its own must end through a worker, so that its end resolves the
  // parent's wait on it (`planEnd`); a top-level PENDING run is cancelled at once.
  stopInPlan(plan, input.run, input.request.request, input.request.versions, {
    cancelPendingAtOnce: input.run.parentRunId === null,
  });
  return plan;
}

function stopInPlan(
  plan: Plan,
  loaded: RunRecord,
  request: StopRequest,
  versions: Versions,
  options: { cancelPendingAtOnce: boolean },
): void {
  const run = plan.current(loaded);
  if (isTerminal(run.state) && run.state !== "INTERRUPTED") return;
  // A cancel overrides a suspend; a suspend never overrides a cancel.
  if (run.stopRequest?.kind === "cancel" && request.kind === "suspend") return;
  const withRequest: RunRecord = { ...run, stopRequest: request };
  plan.update(withRequest);
  const common = { actor: request.by, versions, at: request.at, fence: { unowned: true as const, now: request.at } };
  // A live lease (a worker claimed the run and has not started it, or still holds it): that worker
  // carries the request out, as for a RUNNING run.
  const held = run.leaseOwner !== null && run.leaseExpiresAt !== null && run.leaseExpiresAt > request.at;
  if (!held && request.kind === "cancel") {
    if (run.state === "PENDING" && options.cancelPendingAtOnce) {
      plan.transition(withRequest, {
        ...common,
        to: "CANCELLED",
        reason: `cancelled by ${request.by.kind} ${request.by.id} before it started: ${request.reason}`,
        patch: {
          error: {
            name: "CancelledError",
            code: "CANCELLED",
            message: `cancelled before it started: ${request.reason}`,
            data: { by: request.by.id, stopped: "before_start", inFlight: [] },
          },
        },
      });
      return;
    }
    if (run.state === "NEEDS_RECONCILIATION") {
      // No worker holds or claims it: it waits for an operator, and so does the cancel. Ended now,
      // its unknown effect could never be reconciled; the reconcile lets a worker finish the cancel.
      plan.update({ ...withRequest, error: withPendingCancel(run.error, request) });
      return;
    }
    if (run.state === "PAUSED" || run.state === "INTERRUPTED") {
      plan.transition(withRequest, {
        ...common,
        to: "CANCELLING",
        reason: `cancel requested by ${request.by.kind} ${request.by.id}: ${request.reason}`,
      });
      return;
    }
  } else if (!held && request.kind === "suspend" && run.state === "PAUSED" && run.pausedReason !== "suspended_orphan") {
    plan.transition(withRequest, {
      ...common,
      to: "RESUMING",
      reason: `to be suspended: ${request.reason}`,
    });
    return;
  }
  // A worker holds (or will claim) the run: it carries the request out. Only a holder needs waking.
  if (run.leaseOwner !== null) plan.wakes.push({ kind: "stop", runId: run.id });
}

/**
 * What a transition into a terminal state does besides (DESIGN §4): the backend loads, inside the
 * transaction, the run's open waits, its parent and the parent's open child wait on it (if any),
 * and its children that are not terminal, and writes the plan with the transition.
 */
export function planEnd(input: {
  ended: RunRecord;
  openWaits: readonly WaitRecord[];
  parent: RunRecord | undefined;
  parentWait: WaitRecord | undefined;
  children: readonly RunRecord[];
  at: number;
  plan: Plan;
}): void {
  const { ended, plan, at } = input;
  for (const wait of input.openWaits) {
    if (wait.status === "open") {
      plan.wait({ ...wait, status: "closed", resolution: { outcome: "closed", note: `run ended ${ended.state}`, at } });
    }
  }
  if (input.parent && input.parentWait && input.parentWait.status === "open") {
    resolveInPlan(
      plan,
      input.parent,
      input.parentWait,
      { outcome: "child_ended", value: childEnding(ended), at },
      { actor: SYSTEM, reason: `child run ${ended.id} ended ${ended.state}`, versions: input.parent.versions },
    );
  }
  for (const child of input.children) {
    if (isTerminal(child.state) && child.state !== "INTERRUPTED") continue;
    const policy = child.parentClosePolicy ?? "suspend";
    if (policy === "abandon") continue;
    stopInPlan(
      plan,
      child,
      {
        kind: policy === "cancel" ? "cancel" : "suspend",
        by: SYSTEM,
        reason: `parent run ${ended.id} ended ${ended.state} (parent-close policy: ${policy})`,
        at,
      },
      child.versions,
      // The parent is ending in this very transaction: nothing waits on the child any more.
      { cancelPendingAtOnce: true },
    );
  }
}

/** A `continueAsNew` successor, linked to the run it continues. */
export function successorRun(
  input: CreateRunInput,
  predecessor: RunRecord,
): {
  run: RunRecord;
  transition: TransitionRecord;
} {
  const { run, transition } = pendingRun(input);
  return { run: { ...run, continuedFrom: predecessor.id }, transition };
}

/**
 * `transition`: the backend loads the run and, when `request.to` is terminal, what `planEnd`
 * needs (`endContext`). Returns the plan with the transition first.
 */
export function planTransition(input: { run: RunRecord | undefined; request: TransitionRequest; end?: EndContext }): {
  plan: Plan;
  run: RunRecord;
  transition: TransitionRecord;
} {
  const { request } = input;
  const plan = new Plan();
  const result = applyTransition(input.run, request);
  let ended = result.run;
  plan.transitions.push(result.transition);
  const wake = wakeFor(ended.id, ended.state);
  if (wake) plan.wakes.push(wake);
  if (request.successor) {
    if (!isTerminal(request.to)) throw new RangeError("a successor run is created only with a terminal transition");
    // The successor takes the key over, whatever the request says.
    const successor = successorRun({ ...request.successor, key: ended.key }, ended);
    ended = { ...ended, continuedTo: successor.run.id };
    plan.created.push(successor.run);
    plan.transitions.push(successor.transition);
    plan.wakes.push({ kind: "runnable", runId: successor.run.id });
  }
  plan.update(ended);
  if (hasEnded(request.to) && input.end) {
    planEnd({ ended, ...input.end, at: request.at, plan });
  }
  return { plan, run: plan.current(ended), transition: result.transition };
}
