import type { SerializedError } from "../../core/errors.ts";
import type { Actor, Json, RunRecord, RunUsage, StepRecord, TransitionRecord, Versions } from "../../core/records.ts";
import type { PausedReason, RunState } from "../../core/run-state.ts";
import type { CreateRunInput } from "./run-store.ts";

/**
 * The transitions role of the storage contract: a run's moves from state to state, fenced, with
 * what a run's end does besides, and its history. Checked by `conformance/transitions-conformance.ts`
 * and, for what an end does, `conformance/endings-conformance.ts`.
 */
export interface TransitionStore {
  /**
   * Writes one transition and the run changes that go with it, atomically. Checks, in the same
   * transaction: the run's state is `from` (else `IllegalTransitionError` naming the real
   * state), the pair is legal (`assertTransition`), and the fence holds (else `LeaseLostError`).
   * Transition ids are the run's last id + 1. A transition into a terminal state also does, in
   * the same transaction, what `planEnd` (`rules/ending-rules.ts`) says: the run's open waits are
   * closed; a parent waiting on this run has that wait resolved (and goes RESUMING if PAUSED);
   * open children are stopped according to their parent-close policy; a `successor` is created.
   */
  transition(request: TransitionRequest): Promise<{ run: RunRecord; transition: TransitionRecord }>;
  listTransitions(runId: string): Promise<TransitionRecord[]>;
}

/** How a transition proves it may be written. */
export type Fence =
  /** The writer owns the run under this epoch. */
  | { epoch: number }
  /**
   * The writer takes the run from a lost owner: the epoch and lease expiry must still be those it
   * observed (so an owner that renewed in between wins). Increments the epoch and clears the lease.
   */
  | { takeover: { epoch: number; leaseExpiresAt: number | null } }
  /** An outside act on an unowned run (resume, cancel a paused run): the run must hold no live lease. */
  | { unowned: true; now: number };

/** What `transition` needs. */
export interface TransitionRequest {
  runId: string;
  from: RunState;
  to: RunState;
  pausedReason?: PausedReason;
  actor: Actor;
  reason: string;
  versions: Versions;
  at: number;
  fence: Fence;
  /** Run fields to change in the same transaction. */
  patch?: RunPatch;
  /**
   * `ctx.continueAsNew`: the run to create in the same transaction (with this run's key), linked
   * both ways (`continuedTo` / `continuedFrom`). Only with a terminal `to`.
   */
  successor?: CreateRunInput;
  /**
   * Steps of this run to insert or replace in the same transaction, under the transition's fence
   * (an operator's `reconcile` writes its decision on the effect's step this way).
   */
  steps?: readonly StepRecord[];
  /**
   * Refuse the transition (`IllegalTransitionError`) unless the run's last transition is this one:
   * a move (`export --move`) fences the run only as the contract it exported saw it.
   */
  expectLastTransitionId?: number;
}

/** Run fields a transition may change. */
export interface RunPatch {
  output?: Json;
  error?: SerializedError | null;
  /** Drop the lease (the run leaves the worker). */
  releaseLease?: boolean;
  /** Add one to the automatic-recovery count. */
  countRecovery?: boolean;
  /** Drop the run's stop request (a resume of a suspended orphan). */
  clearStopRequest?: boolean;
  /**
   * Set the automatic-recovery count back to 0: a graceful hand-over (a worker shutting down
   * within its grace) is not a crash, so it must not use up the bound meant for crash loops.
   */
  resetRecoveries?: boolean;
  /** The run's usage, written with the transition that ends it. */
  usage?: RunUsage;
}
