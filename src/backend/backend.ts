import type { SerializedError } from "../core/errors.ts";
import type { Actor, Json, RunRecord, StepRecord, TransitionRecord, Versions } from "../core/records.ts";
import type { PausedReason, RunState } from "../core/run-state.ts";

/**
 * The storage contract (DESIGN §7): the only way the engine touches storage. Every write is a
 * transaction; every write made on behalf of a worker that owns a run carries the lease epoch
 * it claimed with, and a write with a stale epoch throws `LeaseLostError` and stores nothing.
 *
 * A custom backend proves itself by passing the conformance suite exported from
 * `cairn/testing` (`runBackendConformance`).
 */
export interface RuntimeBackend {
  /** Short name for messages and benchmarks ("memory", "sqlite", ...). */
  readonly name: string;
  /** Creates tables or structures; idempotent. Called by `Runtime.start()`. */
  init(): Promise<void>;
  /** Releases connections and files. */
  close(): Promise<void>;

  /**
   * Creates a run in PENDING with its first transition (id 1, from null), or, when `key` is
   * set and a run with the same (agent, workflow, key) exists, returns that run untouched.
   */
  createRun(input: CreateRunInput): Promise<{ run: RunRecord; created: boolean }>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** Newest first. */
  listRuns(filter?: RunFilter): Promise<RunRecord[]>;

  /**
   * Claims one runnable run (state PENDING or RESUMING, no lease or a lapsed one) for
   * `workerId`: sets the lease, increments the epoch and returns the claimed run, oldest run
   * first. With `runId`, only that run is considered. Two concurrent claims never get the same run.
   */
  claimRun(request: ClaimRequest): Promise<RunRecord | undefined>;
  /**
   * Extends the leases a worker holds. Returns the ids whose lease was lost (epoch moved on or
   * owner changed); the worker must drop those runs.
   */
  renewLeases(request: RenewRequest): Promise<string[]>;
  /**
   * Runs in an owned state (RUNNING, RESUMING, …) whose lease has lapsed at `now`
   * (`leaseExpiresAt <= now`, the same rule as claiming), soonest-lapsed first. With
   * `Number.MAX_SAFE_INTEGER` it lists every leased run (used to find owners that died).
   */
  listExpiredLeases(now: number, limit: number): Promise<RunRecord[]>;
  /** INTERRUPTED runs that automatic recovery may pick up (`recoveries < maxRecoveries`), least recently updated first. */
  listRecoverable(maxRecoveries: number, limit: number): Promise<RunRecord[]>;

  /**
   * Writes one transition and the run changes that go with it, atomically. Checks, in the same
   * transaction: the run's state is `from` (else `IllegalTransitionError` naming the real
   * state), the pair is legal (`assertTransition`), and the fence holds (else `LeaseLostError`).
   * Transition ids are the run's last id + 1.
   */
  transition(request: TransitionRequest): Promise<{ run: RunRecord; transition: TransitionRecord }>;
  listTransitions(runId: string): Promise<TransitionRecord[]>;

  /**
   * Inserts or replaces the steps (runId, seq) — all of one run — in one transaction, fenced by
   * `epoch`: a stale epoch stores none of them. `sync: false` lets the commit be cheaper (SQLite
   * synchronous=NORMAL): used when no completed result is among them.
   */
  saveSteps(steps: readonly StepRecord[], options: { epoch: number; sync: boolean }): Promise<void>;
  /** All steps of a run in seq order. */
  loadSteps(runId: string): Promise<StepRecord[]>;

  /**
   * Optional wake-ups, so that workers and waiters need not wait for their next poll: `listener`
   * hears of every run that became runnable (created, or moved to PENDING or RESUMING) and every
   * run that reached a terminal state, in any process using the same storage, once the write
   * has committed. After a lost connection is re-established it hears `reconnected` (wake-ups
   * may have been missed: look again). Backends without it are polled. Returns the unsubscribe
   * function.
   */
  subscribe?(listener: (wake: Wake) => void): Promise<() => Promise<void>>;
}

/** What a wake-up says. */
export type Wake =
  | { kind: "runnable"; runId: string }
  | { kind: "ended"; runId: string }
  /** The subscription was re-established; anything may have happened meanwhile. */
  | { kind: "reconnected" };

/** What `createRun` needs. */
export interface CreateRunInput {
  id: string;
  agent: string;
  workflow: string;
  key: string | null;
  input: Json;
  versions: Versions;
  meta: Record<string, Json>;
  actor: Actor;
  reason: string;
  at: number;
}

/** Filter of `listRuns`. */
export interface RunFilter {
  agent?: string;
  workflow?: string;
  state?: RunState | readonly RunState[];
  /** @default 100 */
  limit?: number;
  /** @default 0 */
  offset?: number;
}

/** What `claimRun` needs. */
export interface ClaimRequest {
  workerId: string;
  now: number;
  leaseMs: number;
  runId?: string;
  /**
   * Only runs of these agents: a worker claims only what it has the code for, so processes
   * hosting different agents can share one database. All agents when omitted.
   */
  agents?: readonly string[];
}

/** What `renewLeases` needs. */
export interface RenewRequest {
  workerId: string;
  now: number;
  leaseMs: number;
  runs: ReadonlyArray<{ runId: string; epoch: number }>;
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
}

/** Run fields a transition may change. */
export interface RunPatch {
  output?: Json;
  error?: SerializedError | null;
  /** Drop the lease (the run leaves the worker). */
  releaseLease?: boolean;
  /** Add one to the automatic-recovery count. */
  countRecovery?: boolean;
  /**
   * Set the automatic-recovery count back to 0: a graceful hand-over (a worker shutting down
   * within its grace) is not a crash, so it must not use up the bound meant for crash loops.
   */
  resetRecoveries?: boolean;
}
