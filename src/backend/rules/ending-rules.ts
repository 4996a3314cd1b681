import type { RunRecord, TransitionRecord, WaitRecord } from "../../core/records.ts";
import { isTerminal } from "../../core/run-state.ts";
import type { CreateRunInput } from "../contract/run-store.ts";
import type { TransitionRequest } from "../contract/transition-store.ts";
import { childEnding, hasEnded, Plan, resolveInPlan, SYSTEM } from "./plan.ts";
import { pendingRun } from "./run-rules.ts";
import { stopInPlan } from "./stop-rules.ts";
import { applyTransition, wakeFor } from "./transition-rules.ts";

/**
 * The rules of a transition and of what a run's end does besides (its waits, its parent, its
 * children, its successor), shared by every backend (see `wait-rules.ts`).
 */

/** What `planEnd` needs besides the ended run and the plan: see {@link planEnd}. */
export interface EndContext {
  openWaits: readonly WaitRecord[];
  parent: RunRecord | undefined;
  parentWait: WaitRecord | undefined;
  children: readonly RunRecord[];
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
