import { LeaseLostError, WaitClosedError, WaitNotFoundError } from "../../core/errors.ts";
import type {
  RunRecord,
  SignalRecord,
  TransitionRecord,
  Versions,
  WaitRecord,
  WaitResolution,
} from "../../core/records.ts";
import { describeWait } from "../../core/wait-description.ts";
import type { ResolveWaitRequest, SuspendRequest, SuspendResult } from "../contract/wait-store.ts";
import { childEnding, dueResolution, hasEnded, Plan, resolveInPlan, SYSTEM } from "./plan.ts";

/**
 * The rules of waits, shared by every backend so they agree exactly (like `transition-rules.ts`);
 * those of signals, stops, run endings and the sweep of child waits are in `signal-rules.ts`,
 * `stop-rules.ts`, `ending-rules.ts` and `child-sweep-rules.ts`. Each `plan…` function is pure:
 * the backend loads, inside its transaction, the rows the function names, calls it, and writes
 * the {@link Plan} it returns — every run, transition, wait and signal in it — in the same
 * transaction, then sends the plan's wake-ups after the commit. `Plan` and the moves the planners
 * share are in `plan.ts`.
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
