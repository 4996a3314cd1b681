import { StorageError } from "../../core/errors.ts";
import type {
  AcceptanceRecord,
  RunRecord,
  SignalRecord,
  StepRecord,
  TransitionRecord,
  WaitRecord,
} from "../../core/records.ts";
import type { RateLimitStore, RuntimeBackend, ScheduleStore } from "../backend.ts";
import type { ForkRunRequest, ForkRunResult } from "../contract/fork-store.ts";
import type { ImportRunInput, ImportRunResult } from "../contract/import-store.ts";
import type { ClaimRequest, RenewRequest } from "../contract/lease-store.ts";
import type { PruneRunsRequest, PruneRunsResult } from "../contract/prune-store.ts";
import type { CreateRunInput, CreateRunResult, RunCounts, RunFilter } from "../contract/run-store.ts";
import type { SignalRequest, SignalResult } from "../contract/signal-store.ts";
import type { StopRunRequest } from "../contract/stop-store.ts";
import type { TransitionFeedPage, TransitionFeedRequest } from "../contract/transition-feed.ts";
import type { TransitionRequest } from "../contract/transition-store.ts";
import type { ResolveWaitRequest, ResolveWaitResult, SuspendRequest, SuspendResult } from "../contract/wait-store.ts";
import type { Wake } from "../contract/wake-ups.ts";
import { inlineLimit } from "../rows/blob-payloads.ts";
import { SqliteConnection } from "./sqlite-connection.ts";
import { toStorageError } from "./sqlite-errors.ts";
import { SqliteFeed } from "./sqlite-feed.ts";
import { SqliteForks } from "./sqlite-forks.ts";
import { SqliteImports } from "./sqlite-imports.ts";
import { SqliteJournal } from "./sqlite-journal.ts";
import { SqliteLeases } from "./sqlite-leases.ts";
import type { SqliteBackendOptions, SqliteSynchronous } from "./sqlite-options.ts";
import { SqlitePrune } from "./sqlite-prune.ts";
import { SqliteRateLimits } from "./sqlite-rate-limits.ts";
import { SqliteRuns } from "./sqlite-runs.ts";
import { SqliteSchedules } from "./sqlite-schedules.ts";
import { SqliteSignals } from "./sqlite-signals.ts";
import { prepareStatements } from "./sqlite-statements.ts";
import { SqliteStops } from "./sqlite-stops.ts";
import { SqliteTransitions } from "./sqlite-transitions.ts";
import { SqliteWaits } from "./sqlite-waits.ts";
import { SqliteWakeUps } from "./sqlite-wake-ups.ts";

export type { SqliteBackendOptions, SqliteSynchronous } from "./sqlite-options.ts";

/** An open backend: the file, and the role that runs each call on it (each prepared once, in `init`). */
interface SqliteParts {
  readonly connection: SqliteConnection;
  readonly runs: SqliteRuns;
  readonly imports: SqliteImports;
  readonly leases: SqliteLeases;
  readonly transitions: SqliteTransitions;
  readonly journal: SqliteJournal;
  readonly waits: SqliteWaits;
  readonly signals: SqliteSignals;
  readonly stops: SqliteStops;
  readonly feed: SqliteFeed;
  readonly forks: SqliteForks;
  readonly prune: SqlitePrune;
  readonly wakeUps: SqliteWakeUps;
  readonly schedules: SqliteSchedules;
  readonly rateLimits: SqliteRateLimits;
}

/**
 * Stores runs in one SQLite file through better-sqlite3 (WAL mode): embedded, no server. Several
 * processes may share the file; every write takes the write lock up front (`BEGIN IMMEDIATE`), so
 * their claims and fences are as exclusive as in one process.
 *
 * Each call goes to the file of its role (`sqlite-runs.ts`, `sqlite-leases.ts`,
 * `sqlite-transitions.ts`, `sqlite-journal.ts`, `sqlite-waits.ts`, `sqlite-signals.ts`,
 * `sqlite-stops.ts`, `sqlite-feed.ts`), which runs it on the connection (`sqlite-connection.ts`).
 *
 * @example
 * import { SqliteBackend } from "cairn/sqlite";
 * const backend = new SqliteBackend({ path: ".cairn/runs.db" });
 * await backend.init();
 */
export class SqliteBackend implements RuntimeBackend {
  readonly name = "sqlite";
  /** The database file, as given. */
  readonly path: string;
  /** See {@link SqliteBackendOptions.durability}. */
  readonly durability: "process" | "machine";
  readonly #busyTimeoutMs: number;
  /** See {@link SqliteBackendOptions.inlineLimitBytes}. */
  readonly inlineLimitBytes: number;
  #parts: SqliteParts | undefined;

  constructor(options: SqliteBackendOptions) {
    this.path = options.path;
    this.durability = options.durability ?? "machine";
    this.#busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    this.inlineLimitBytes = inlineLimit(options.inlineLimitBytes, "SqliteBackend");
  }

  /** Opens the file, sets WAL, the busy timeout and foreign keys, and creates or checks the schema. */
  async init(): Promise<void> {
    if (this.#parts) return;
    const connection = SqliteConnection.open(this.path, {
      durability: this.durability,
      busyTimeoutMs: this.#busyTimeoutMs,
    });
    try {
      const s = prepareStatements(connection.db);
      this.#parts = {
        connection,
        runs: new SqliteRuns(connection, s),
        imports: new SqliteImports(connection, s, this.inlineLimitBytes),
        leases: new SqliteLeases(connection, s),
        transitions: new SqliteTransitions(connection, s, this.inlineLimitBytes),
        journal: new SqliteJournal(connection, s, this.inlineLimitBytes),
        waits: new SqliteWaits(connection, s),
        signals: new SqliteSignals(connection, s),
        stops: new SqliteStops(connection, s),
        feed: new SqliteFeed(connection, s),
        forks: new SqliteForks(connection, s, this.inlineLimitBytes),
        prune: new SqlitePrune(connection),
        wakeUps: new SqliteWakeUps(connection.db, connection.bell),
        schedules: new SqliteSchedules(connection),
        rateLimits: new SqliteRateLimits(connection),
      };
    } catch (error) {
      connection.close();
      throw toStorageError(error, this.path, "open");
    }
  }

  async close(): Promise<void> {
    const parts = this.#parts;
    this.#parts = undefined;
    parts?.wakeUps.close();
    parts?.connection.close();
  }

  /**
   * The connection's `synchronous` setting as SQLite reports it, for diagnostics and tests:
   * FULL when the last write had to be durable against a machine crash, NORMAL otherwise.
   */
  get synchronous(): SqliteSynchronous {
    return this.#open().connection.synchronous;
  }

  /** Schedule records (`ScheduleStore`), once the backend is open. */
  get schedules(): ScheduleStore {
    return this.#open().schedules;
  }

  /** Shared rate limits (`RateLimitStore`), once the backend is open. */
  get rateLimits(): RateLimitStore {
    return this.#open().rateLimits;
  }

  async createRun(input: CreateRunInput): Promise<CreateRunResult> {
    return this.#open().runs.createRun(input);
  }

  async importRun(input: ImportRunInput): Promise<ImportRunResult> {
    return this.#open().imports.importRun(input);
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    return this.#open().runs.getRun(runId);
  }

  async countRuns(now: number): Promise<RunCounts> {
    return this.#open().runs.countRuns(now);
  }

  async listRuns(filter: RunFilter = {}): Promise<RunRecord[]> {
    return this.#open().runs.listRuns(filter);
  }

  async forkRun(request: ForkRunRequest): Promise<ForkRunResult> {
    return this.#open().forks.forkRun(request);
  }

  async recordAcceptance(runId: string, acceptance: AcceptanceRecord): Promise<RunRecord> {
    return this.#open().runs.recordAcceptance(runId, acceptance);
  }

  async claimRun(request: ClaimRequest): Promise<RunRecord | undefined> {
    return this.#open().leases.claimRun(request);
  }

  async renewLeases(request: RenewRequest): Promise<string[]> {
    return this.#open().leases.renewLeases(request);
  }

  async listExpiredLeases(now: number, limit: number): Promise<RunRecord[]> {
    return this.#open().leases.listExpiredLeases(now, limit);
  }

  async listRecoverable(maxRecoveries: number, limit: number): Promise<RunRecord[]> {
    return this.#open().leases.listRecoverable(maxRecoveries, limit);
  }

  async transition(request: TransitionRequest): Promise<{ run: RunRecord; transition: TransitionRecord }> {
    return this.#open().transitions.transition(request);
  }

  async listTransitions(runId: string): Promise<TransitionRecord[]> {
    return this.#open().transitions.listTransitions(runId);
  }

  async saveSteps(steps: readonly StepRecord[], options: { epoch: number; sync: boolean }): Promise<void> {
    await this.#open().journal.saveSteps(steps, options);
  }

  async loadSteps(runId: string): Promise<StepRecord[]> {
    return this.#open().journal.loadSteps(runId);
  }

  async suspend(request: SuspendRequest): Promise<SuspendResult> {
    return this.#open().waits.suspend(request);
  }

  async loadWaits(runId: string): Promise<WaitRecord[]> {
    return this.#open().waits.loadWaits(runId);
  }

  async resolveWait(request: ResolveWaitRequest): Promise<ResolveWaitResult> {
    return this.#open().waits.resolveWait(request);
  }

  async fireDueWaits(now: number, limit: number): Promise<WaitRecord[]> {
    return this.#open().waits.fireDueWaits(now, limit);
  }

  async nextDueAt(): Promise<number | null> {
    return this.#open().waits.nextDueAt();
  }

  async resolveEndedChildWaits(now: number, limit: number): Promise<WaitRecord[]> {
    return this.#open().waits.resolveEndedChildWaits(now, limit);
  }

  async deliverSignal(request: SignalRequest): Promise<SignalResult> {
    return this.#open().signals.deliverSignal(request);
  }

  async listSignals(runId: string): Promise<SignalRecord[]> {
    return this.#open().signals.listSignals(runId);
  }

  async requestStop(request: StopRunRequest): Promise<{ run: RunRecord; transitions: TransitionRecord[] }> {
    return this.#open().stops.requestStop(request);
  }

  async listStopRequested(workerId: string): Promise<string[]> {
    return this.#open().stops.listStopRequested(workerId);
  }

  /**
   * Wake-ups across processes on this file (see `WakeUps`): a write that makes a run runnable,
   * ends it or asks for a stop rings the file's doorbell (`<path>-wake`) after its commit; each
   * subscribed process watches it and reads what changed from the database. Workers then poll only
   * as a fallback.
   */
  async subscribe(listener: (wake: Wake) => void): Promise<() => Promise<void>> {
    const unsubscribe = this.#open().wakeUps.subscribe(listener);
    return async () => unsubscribe();
  }

  async listTransitionsSince(request: TransitionFeedRequest): Promise<TransitionFeedPage> {
    return this.#open().feed.listTransitionsSince(request);
  }

  async latestTransitionCursor(): Promise<string> {
    return this.#open().feed.latestTransitionCursor();
  }

  async pruneRuns(request: PruneRunsRequest): Promise<PruneRunsResult> {
    return this.#open().prune.pruneRuns(request);
  }

  #open(): SqliteParts {
    if (!this.#parts) {
      throw new StorageError(`SqliteBackend for "${this.path}" is not open; call init() first (and not after close())`);
    }
    return this.#parts;
  }
}
