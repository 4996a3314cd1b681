import type { SerializedError } from "../core/errors.ts";
import type {
  AcceptanceRecord,
  Actor,
  Json,
  ParentClosePolicy,
  RunRecord,
  RunUsage,
  SignalRecord,
  StepRecord,
  StopRequest,
  TransitionRecord,
  Versions,
  WaitRecord,
  WaitResolution,
} from "../core/records.ts";
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
   * set and a run with the same (agent, workflow, key) exists, returns that run untouched. A
   * created run comes with the transition written, so that the caller can report it without
   * reading it back.
   */
  createRun(input: CreateRunInput): Promise<CreateRunResult>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** Newest first. */
  listRuns(filter?: RunFilter): Promise<RunRecord[]>;

  /**
   * Claims one runnable run (state PENDING, RESUMING, CANCELLING or RECONCILING, no lease or a lapsed one) for
   * `workerId`: sets the lease, increments the epoch and returns the claimed run, oldest run
   * first. With `runId`, only that run is considered. Two concurrent claims never get the same run.
   */
  claimRun(request: ClaimRequest): Promise<RunRecord | undefined>;
  /**
   * Optional: claims up to `limit` runnable runs at once, oldest first, under the same rules as
   * `claimRun` (without `runId`), in one transaction. Two concurrent claims never get the same run.
   * A worker uses it, when a backend has it, to fill its free slots in one round trip. With
   * `start`, each claimed run that is PENDING also goes RUNNING in that transaction, as
   * `transition` would record it (fenced by the epoch the claim gave); a run whose transition the
   * rules refuse comes back claimed, without one.
   */
  claimRuns?(request: ClaimManyRequest): Promise<ClaimedRun[]>;
  /**
   * Extends the leases a worker holds. Returns the ids whose lease was lost (epoch moved on or
   * owner changed); the worker must drop those runs.
   */
  renewLeases(request: RenewRequest): Promise<string[]>;
  /**
   * Runs held under a lease that has lapsed at `now` (`leaseExpiresAt <= now`, the same rule as
   * claiming), soonest-lapsed first: runs in an owned state (RUNNING, RESUMING, …) and PENDING runs
   * a worker claimed and has not started. With `Number.MAX_SAFE_INTEGER` it lists every leased run
   * (used to find owners that died).
   */
  listExpiredLeases(now: number, limit: number): Promise<RunRecord[]>;
  /** INTERRUPTED runs that automatic recovery may pick up (`recoveries < maxRecoveries`), least recently updated first. */
  listRecoverable(maxRecoveries: number, limit: number): Promise<RunRecord[]>;

  /**
   * Writes one transition and the run changes that go with it, atomically. Checks, in the same
   * transaction: the run's state is `from` (else `IllegalTransitionError` naming the real
   * state), the pair is legal (`assertTransition`), and the fence holds (else `LeaseLostError`).
   * Transition ids are the run's last id + 1. A transition into a terminal state also does, in
   * the same transaction, what `planEnd` (`wait-rules.ts`) says: the run's open waits are
   * closed; a parent waiting on this run has that wait resolved (and goes RESUMING if PAUSED);
   * open children are stopped according to their parent-close policy; a `successor` is created.
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
   * Pauses a run on what its workflow waits for, or finds that it need not pause — atomically, so
   * that a signal, an answer or a timer arriving meanwhile is never lost. In one transaction,
   * fenced by `epoch`: stores `waits` that are not stored yet (by id); then, for each wait in
   * `blockedOn`, resolves it at once if it can be (a due time passed, a matching signal in the
   * inbox, the child run ended) — see `planSuspend` in `wait-rules.ts`. If any wait in `blockedOn`
   * is resolved (now or earlier), or the run has a stop request, the run is not paused. Otherwise
   * it goes RUNNING -> PAUSED (`pausedReason`) and its lease is released.
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
   * Puts a signal in the run's inbox, or says it is a duplicate when the run's inbox already holds
   * `messageId` (nothing is written then). A new signal resolves the run's oldest open signal wait
   * of that name (and a PAUSED run goes RESUMING); with none, it stays in the inbox for a later
   * wait. A run that has ended (a terminal state other than INTERRUPTED) takes no signal
   * (`RunNotOpenError`); an interrupted run keeps its inbox.
   */
  deliverSignal(request: SignalRequest): Promise<SignalResult>;
  /** The run's inbox, oldest first. */
  listSignals(runId: string): Promise<SignalRecord[]>;
  /**
   * Resolves open waits whose `dueAt <= now` (timers fire, retries come due, timeouts time out,
   * approvals expire — `dueResolution`) and moves their PAUSED runs to RESUMING. At most `limit`
   * waits; returns those it resolved.
   */
  fireDueWaits(now: number, limit: number): Promise<WaitRecord[]>;
  /** The earliest `dueAt` among open waits, or null. */
  nextDueAt(): Promise<number | null>;
  /**
   * The sweep of child waits: resolves open waits of kind `child` whose child run has ended (a
   * terminal state other than INTERRUPTED) — waits that the child's end should have resolved in
   * its own transaction and did not — as that end would have (`planChildSweep` in
   * `wait-rules.ts`: outcome `child_ended`, the child's ending as the value, a note that the sweep
   * found it), and moves their PAUSED runs to RESUMING with a reason naming the child. Each wait
   * is resolved once, however many workers sweep at the same time; a run that has ended is left as
   * it is. At most `limit` runs; returns the waits it resolved (none, unless something went wrong).
   */
  resolveEndedChildWaits(now: number, limit: number): Promise<WaitRecord[]>;
  /**
   * Asks a run to stop (cancel) or to suspend (a child whose parent ended), in one transaction —
   * see `planStop`: a PENDING run is cancelled at once, a PAUSED one moves to where a worker
   * carries the request out, a run a worker holds gets the request stored for that worker. A
   * terminal run is returned untouched.
   */
  requestStop(request: StopRunRequest): Promise<{ run: RunRecord; transitions: TransitionRecord[] }>;
  /** Ids of the runs `workerId` holds that have a stop request. */
  listStopRequested(workerId: string): Promise<string[]>;

  /**
   * Stores an operator's verdict on a COMPLETED run (`accept` / `reject`), apart from its state:
   * in one transaction, refuses a run that is not COMPLETED (`RunNotCompletedError`) or already
   * has a verdict (`AlreadyDecidedError`), else sets `acceptance` and returns the run.
   */
  recordAcceptance(runId: string, acceptance: AcceptanceRecord): Promise<RunRecord>;

  /**
   * Optional wake-ups, so that workers and waiters need not wait for their next poll: `listener`
   * hears of every run that became runnable (created, or moved to PENDING, RESUMING or
   * CANCELLING), every run a stop was asked of, and every run that reached a terminal state, in
   * any process using the same storage, once the write has committed. After a lost connection is re-established it hears `reconnected` (wake-ups
   * may have been missed: look again). Backends without it are polled. Returns the unsubscribe
   * function.
   */
  subscribe?(listener: (wake: Wake) => void): Promise<() => Promise<void>>;

  /**
   * Optional global transition feed (with {@link RuntimeBackend.latestTransitionCursor}; a backend
   * has both or neither): every transition of every run, in one order that every reader sees the
   * same and that only ever grows at its end, so a reader that keeps the cursor of the last
   * transition it read gets each transition exactly once, across restarts and processes.
   *
   * Returns at most `limit` transitions that come after `after` (`null`: from the first
   * transition stored), each with its cursor and its run's agent and workflow, and `cursor`:
   * where to read on from (the last one's cursor, or `after` — the start for `null` — when there
   * are none). A run's transitions come in id order; transitions committed one after another come
   * in that order; the order of transitions whose transactions overlapped is the backend's, fixed
   * once they are returned. A transition is returned only once nothing can come before it any
   * more (PostgreSQL: once every transaction that began writing before it has ended), so it may
   * show up a little after its commit. Cursors are opaque text (letters, digits, `.`, `-`, `_`); a
   * cursor this feed did not give out may be refused with `InvalidInputError`.
   */
  listTransitionsSince?(request: TransitionFeedRequest): Promise<TransitionFeedPage>;
  /**
   * The cursor after the newest transition {@link RuntimeBackend.listTransitionsSince} returns
   * now: reading from it gives only what comes later ("from now"), which may include a transition
   * that committed a moment before but that the feed still held back (see above). On an empty
   * store, the start.
   */
  latestTransitionCursor?(): Promise<string>;
}

/** What `listTransitionsSince` needs. */
export interface TransitionFeedRequest {
  /** The cursor of the last transition read (or `latestTransitionCursor()`); null: from the start. */
  after: string | null;
  /** At most this many transitions (1 or more). */
  limit: number;
}

/** One transition of the global feed. */
export interface TransitionFeedEntry {
  /** Its position: read after it with this. */
  cursor: string;
  transition: TransitionRecord;
  /** The run's agent and workflow (a run's never change). */
  agent: string;
  workflow: string;
}

/** What `listTransitionsSince` returns. */
export interface TransitionFeedPage {
  transitions: TransitionFeedEntry[];
  /** Where to read on from: the last transition's cursor, or the request's position when there are none. */
  cursor: string;
}

/** What a wake-up says. */
export type Wake =
  | { kind: "runnable"; runId: string }
  | { kind: "ended"; runId: string }
  /** A stop (cancel, suspend) was asked of a run a worker may hold. */
  | { kind: "stop"; runId: string }
  /** The subscription was re-established; anything may have happened meanwhile. */
  | { kind: "reconnected" };

/** What `createRun` returns: the run created with its first transition, or the run its key names. */
export type CreateRunResult =
  | { run: RunRecord; created: true; transition: TransitionRecord }
  | { run: RunRecord; created: false };

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
  /** The spawning run, for a child run. */
  parentRunId?: string | null;
  /** @default "suspend" for a child run, null otherwise */
  parentClosePolicy?: ParentClosePolicy | null;
}

/** Filter of `listRuns`. */
export interface RunFilter {
  agent?: string;
  workflow?: string;
  state?: RunState | readonly RunState[];
  /** Only children of this run. */
  parentRunId?: string;
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
  /**
   * With `runId`: the run's lease is held by `leaseOwner`, whose process is known to be gone (a
   * worker of this host that no longer exists), under `epoch`. The run is claimed as if that
   * lease had lapsed, provided its epoch and owner are still those (so a live owner that renewed,
   * or another claim, wins). Used for a PENDING run claimed by a worker that died before starting it.
   */
  takeover?: { epoch: number; leaseOwner: string };
}

/** What `claimRuns` needs. */
export interface ClaimManyRequest extends Omit<ClaimRequest, "runId"> {
  /** Most runs claimed. */
  limit: number;
  /**
   * The PENDING -> RUNNING transition of a claimed PENDING run, recorded by the claim itself (at
   * the claim's `now`): what the worker would otherwise ask of `transition` next, with one round
   * trip and one commit fewer. A PENDING run whose agent `versions` does not name comes back
   * leased and not started, as may any run the backend cannot start in the claim; the worker then
   * records RUNNING itself.
   */
  start?: ClaimStart;
}

/** What `claimRuns` records for each PENDING run it starts: {@link ClaimManyRequest.start}. */
export interface ClaimStart {
  actor: Actor;
  reason: string;
  /** The versions a run of each agent starts under, keyed by agent name. */
  versions: Readonly<Record<string, Versions>>;
}

/** A run `claimRuns` claimed, and its RUNNING transition when the claim recorded one (`start`). */
export interface ClaimedRun {
  run: RunRecord;
  started?: TransitionRecord;
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

/** What `deliverSignal` needs. */
export interface SignalRequest {
  runId: string;
  name: string;
  payload: Json;
  messageId: string;
  actor: Actor;
  versions: Versions;
  at: number;
  /**
   * Unread signals the run's inbox may hold: a signal no open wait takes is refused with
   * `SignalInboxFullError` when the inbox holds that many already (nothing is written). The
   * backend then loads the count (`planSignal`'s `unread`). @default no limit
   */
  maxUnread?: number;
}

/** What `deliverSignal` did. */
export interface SignalResult {
  /** The inbox held this message id already: nothing was delivered. */
  duplicate: boolean;
  signal: SignalRecord;
  /** The wait it resolved, if one was open. */
  deliveredTo: string | null;
  run: RunRecord;
  transition: TransitionRecord | undefined;
}

/** What `requestStop` needs. */
export interface StopRunRequest {
  runId: string;
  request: StopRequest;
  versions: Versions;
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
