import type {
  Actor,
  Json,
  RunRecord,
  SignalRecord,
  TransitionRecord,
  Versions,
  WaitRecord,
  WaitResolution,
} from "../../core/records.ts";
import { isTerminal } from "../../core/run-state.ts";
import type { TransitionRequest } from "../contract/transition-store.ts";
import type { Wake } from "../contract/wake-ups.ts";
import { applyTransition, wakeFor } from "./transition-rules.ts";

/**
 * The building blocks of the planners (`wait-rules.ts`, `signal-rules.ts`, `stop-rules.ts`,
 * `ending-rules.ts`, `child-sweep-rules.ts`): the {@link Plan} a planner returns and the moves
 * every planner shares (resolving a wait, which may resume its run; how a child's ending reads to
 * its parent).
 */

/** The writes of one operation. */
export class Plan {
  /** Runs changed (full records, newest version); written with UPDATE. */
  readonly runs = new Map<string, RunRecord>();
  /** Runs to INSERT (a `continueAsNew` successor), with their first transition in `transitions`. */
  readonly created: RunRecord[] = [];
  readonly transitions: TransitionRecord[] = [];
  /** Waits to insert or replace, by (runId, id). */
  readonly waits: WaitRecord[] = [];
  /** Signals to insert or replace, by (runId, messageId). */
  readonly signals: SignalRecord[] = [];
  readonly wakes: Wake[] = [];

  /** The run as this plan leaves it (`runs` first, then what was loaded). */
  current(run: RunRecord): RunRecord {
    return this.runs.get(run.id) ?? run;
  }

  /** Applies a transition to the run (as the plan leaves it) and records it. */
  transition(run: RunRecord, request: Omit<TransitionRequest, "runId" | "from">): RunRecord {
    const base = this.current(run);
    const result = applyTransition(base, { ...request, runId: base.id, from: base.state });
    this.runs.set(result.run.id, result.run);
    this.transitions.push(result.transition);
    const wake = wakeFor(result.run.id, result.run.state);
    if (wake) this.wakes.push(wake);
    return result.run;
  }

  /** Records a changed run without a transition. */
  update(run: RunRecord): void {
    this.runs.set(run.id, run);
  }

  wait(wait: WaitRecord): void {
    const i = this.waits.findIndex((w) => w.runId === wait.runId && w.id === wait.id);
    if (i >= 0) this.waits[i] = wait;
    else this.waits.push(wait);
  }
}

/** The resolution a wait gets when its due time passes. */
export function dueResolution(wait: WaitRecord, at: number): WaitResolution {
  switch (wait.kind) {
    case "timer":
    case "retry":
      return { outcome: "fired", at };
    case "approval":
      return { outcome: "expired", at };
    default:
      return { outcome: "timed_out", at };
  }
}

/**
 * Whether a run has ended for good as far as its waits, its parent and its children are
 * concerned: a terminal state other than INTERRUPTED (an interrupted run is resumed).
 */
export function hasEnded(state: RunRecord["state"]): boolean {
  return isTerminal(state) && state !== "INTERRUPTED";
}

/** Whether a resolved wait should wake its run: a PAUSED run that is not a suspended orphan. */
export function wakesRun(run: RunRecord): boolean {
  return run.state === "PAUSED" && run.pausedReason !== "suspended_orphan";
}

/** The actor of what the runtime does on its own (timers, a child's end). */
export const SYSTEM: Actor = { kind: "system", id: "cairn" };

/** Resolves `wait` in the plan and, when the run is PAUSED on something, resumes it. */
export function resolveInPlan(
  plan: Plan,
  run: RunRecord,
  wait: WaitRecord,
  resolution: WaitResolution,
  details: { actor: Actor; reason: string; versions: Versions },
): WaitRecord {
  const resolved: WaitRecord = { ...wait, status: "resolved", resolution };
  plan.wait(resolved);
  if (wakesRun(plan.current(run))) {
    plan.transition(run, {
      to: "RESUMING",
      actor: details.actor,
      reason: details.reason,
      versions: details.versions,
      at: resolution.at,
      fence: { unowned: true, now: resolution.at },
    });
  }
  return resolved;
}

/**
 * The value a child wait resolves with: how the child ended, the run that continues it when it
 * continued as new (the parent then waits for that one), and what it used (`usage`, the
 * `RunUsage` its ending transition wrote; the key is left out when it has none).
 */
export function childEnding(child: RunRecord): Json {
  const ending: { [key: string]: Json } = {
    runId: child.id,
    state: child.state,
    output: child.output ?? null,
    error: (child.error as unknown as Json) ?? null,
    continuedTo: child.continuedTo,
  };
  // What the child used (set by the transition that ended it), for the parent's own usage.
  if (child.usage !== undefined) ending.usage = { ...child.usage };
  return ending;
}
