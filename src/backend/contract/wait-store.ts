import type {
  Actor,
  RunRecord,
  StopRequest,
  TransitionRecord,
  Versions,
  WaitRecord,
  WaitResolution,
} from "../../core/records.ts";
import type { PausedReason } from "../../core/run-state.ts";

/**
 * The waits role of the storage contract: a run pausing on what its workflow waits for, waits
 * resolved from outside or when they come due. Checked by `conformance/waits-conformance.ts` and
 * `conformance/wait-resolution-conformance.ts`.
 */
export interface WaitStore {
  /**
   * Pauses a run on what its workflow waits for, or finds that it need not pause — atomically, so
   * that a signal, an answer or a timer arriving meanwhile is never lost. In one transaction,
   * fenced by `epoch`: stores `waits` that are not stored yet (by id); then, for each wait in
   * `blockedOn`, resolves it at once if it can be (a due time passed, a matching signal in the
   * inbox, the child run ended) — see `planSuspend` in `rules/wait-rules.ts`. If any wait in
   * `blockedOn` is resolved (now or earlier), or the run has a stop request, the run is not paused.
   * Otherwise it goes RUNNING -> PAUSED (`pausedReason`) and its lease is released.
   */
  suspend(request: SuspendRequest): Promise<SuspendResult>;
  /** Every wait of a run, in (seq, id) order. */
  loadWaits(runId: string): Promise<WaitRecord[]>;
  /**
   * Resolves an open wait from outside (an answer, an approval decision). In one transaction:
   * reads the wait (`WaitNotFoundError` when there is none, `WaitClosedError` when it is no longer
   * open), calls `decide` with it and the run — `decide` may throw to refuse, and then nothing is
   * written — and stores the resolution it returns. A PAUSED run (not suspended_orphan) goes
   * RESUMING in the same transaction, with `actor` and `reason`.
   */
  resolveWait(request: ResolveWaitRequest): Promise<ResolveWaitResult>;
  /**
   * Resolves open waits whose `dueAt <= now` (timers fire, retries come due, timeouts time out,
   * approvals expire — `dueResolution`) and moves their PAUSED runs to RESUMING. At most `limit`
   * waits; returns those it resolved.
   */
  fireDueWaits(now: number, limit: number): Promise<WaitRecord[]>;
  /** The earliest `dueAt` among open waits, or null. */
  nextDueAt(): Promise<number | null>;
}

/** What `suspend` needs. */
export interface SuspendRequest {
  runId: string;
  epoch: number;
  /** Waits opened since the run was claimed; those already stored are left as they are. */
  waits: readonly WaitRecord[];
  /** Ids of the waits the workflow is blocked on now. */
  blockedOn: readonly string[];
  pausedReason: PausedReason;
  actor: Actor;
  reason: string;
  versions: Versions;
  at: number;
}

/** What `suspend` did. */
export type SuspendResult =
  | { paused: true; run: RunRecord; transition: TransitionRecord }
  /** Not paused: some of the waits are resolved (replay and go on), or the run has a stop request. */
  | { paused: false; resolved: WaitRecord[]; stopRequest: StopRequest | undefined };

/** What `resolveWait` needs. */
export interface ResolveWaitRequest {
  runId: string;
  waitId: string;
  /** Called inside the transaction with the stored open wait; throws to refuse. */
  decide: (wait: WaitRecord, run: RunRecord) => Omit<WaitResolution, "at">;
  actor: Actor;
  /** Reason of the RESUMING transition. */
  reason: string;
  versions: Versions;
  at: number;
}

/** What `resolveWait` did. */
export interface ResolveWaitResult {
  wait: WaitRecord;
  run: RunRecord;
  /** PAUSED -> RESUMING, when the run was paused. */
  transition: TransitionRecord | undefined;
}
