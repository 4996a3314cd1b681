import type {
  AcceptanceRecord,
  RunRecord,
  SignalRecord,
  StepRecord,
  TransitionRecord,
  WaitRecord,
} from "../../core/records.ts";
import type { RuntimeBackend } from "../backend.ts";
import type { ForkRunRequest, ForkRunResult } from "../contract/fork-store.ts";
import type { ImportRunInput, ImportRunResult } from "../contract/import-store.ts";
import type { ClaimedRun, ClaimManyRequest, ClaimRequest, RenewRequest } from "../contract/lease-store.ts";
import type { PruneRunsRequest, PruneRunsResult } from "../contract/prune-store.ts";
import type { CreateRunInput, CreateRunResult, RunCounts, RunFilter } from "../contract/run-store.ts";
import type { SignalRequest, SignalResult } from "../contract/signal-store.ts";
import type { StopRunRequest } from "../contract/stop-store.ts";
import type { TransitionFeedPage, TransitionFeedRequest } from "../contract/transition-feed.ts";
import type { TransitionRequest } from "../contract/transition-store.ts";
import type { ResolveWaitRequest, ResolveWaitResult, SuspendRequest, SuspendResult } from "../contract/wait-store.ts";
import type { Wake } from "../contract/wake-ups.ts";
import { inlineLimit } from "../rows/blob-payloads.ts";
import { pgDriver } from "./pg-driver.ts";
import { makePool, PostgresConnection } from "./postgres-connection.ts";
import { describeTarget } from "./postgres-errors.ts";
import { PostgresFeed } from "./postgres-feed.ts";
import { PostgresForks } from "./postgres-forks.ts";
import { PostgresImports } from "./postgres-imports.ts";
import { PostgresJournal } from "./postgres-journal.ts";
import { PostgresLeases } from "./postgres-leases.ts";
import { listenForWakeUps, wakeChannel } from "./postgres-listener.ts";
import { applyMigrations, checkSchema, type MigrationResult } from "./postgres-migrations.ts";
import { checkOptions, type PostgresBackendOptions } from "./postgres-options.ts";
import type { PostgresShared } from "./postgres-plans.ts";
import { PostgresPrune } from "./postgres-prune.ts";
import { PostgresRateLimits } from "./postgres-rate-limits.ts";
import { PostgresRuns } from "./postgres-runs.ts";
import { PostgresSchedules } from "./postgres-schedules.ts";
import { PostgresSignals } from "./postgres-signals.ts";
import { statements } from "./postgres-statements.ts";
import { PostgresStops } from "./postgres-stops.ts";
import { PostgresTransitions } from "./postgres-transitions.ts";
import { PostgresWaits } from "./postgres-waits.ts";

export type { PostgresBackendOptions } from "./postgres-options.ts";

/**
 * Stores runs in PostgreSQL through the `pg` driver: many worker processes on many machines share
 * one database. Runs are claimed with `FOR UPDATE SKIP LOCKED`, every write is fenced by the
 * lease epoch in the same transaction, and the schema is versioned and migrated on `init()`.
 *
 * Workers and waiters are woken over LISTEN/NOTIFY (see {@link PostgresBackend.subscribe}): a
 * new run, a move into a claimable state (PENDING, RESUMING, CANCELLING), a move into a terminal
 * state and a stop request for a run a worker holds send a `pg_notify` that goes out when the
 * write commits. Polling stays as the slow fallback.
 *
 * Waits, signals, stops and run endings follow the planners of `rules/`, each in one
 * transaction that locks the run row first (see `postgres-plans.ts` for the lock order). Each call
 * goes to the file of its role (`postgres-runs.ts`, `postgres-leases.ts`, `postgres-transitions.ts`,
 * `postgres-journal.ts`, `postgres-waits.ts`, `postgres-signals.ts`, `postgres-stops.ts`,
 * `postgres-feed.ts`); what one process asks at once is written in batches (`batching/`).
 *
 * @example
 * import { Runtime } from "cairn";
 * import { PostgresBackend } from "cairn/postgres";
 * const backend = new PostgresBackend({ connectionString: process.env.DATABASE_URL });
 * const runtime = new Runtime({ agents: [reportBuilder], backend });
 * await runtime.start();
 */
export class PostgresBackend implements RuntimeBackend {
  readonly name = "postgres";
  /** The schema holding the tables (see {@link PostgresBackendOptions.schema}). */
  readonly schema: string;
  /** See {@link PostgresBackendOptions.durability}. */
  readonly durability: "process" | "machine";
  /** See {@link PostgresBackendOptions.inlineLimitBytes}. */
  readonly inlineLimitBytes: number;
  readonly #options: PostgresBackendOptions;
  /** Statements, connections and transactions, their failures named; the pool once open. */
  readonly #db: PostgresConnection;
  readonly #channel: string;
  readonly #runs: PostgresRuns;
  readonly #imports: PostgresImports;
  readonly #leases: PostgresLeases;
  readonly #transitions: PostgresTransitions;
  readonly #journal: PostgresJournal;
  readonly #waits: PostgresWaits;
  readonly #signals: PostgresSignals;
  readonly #stops: PostgresStops;
  readonly #feed: PostgresFeed;
  readonly #forks: PostgresForks;
  readonly #prune: PostgresPrune;
  /** Schedule records (`ScheduleStore`). */
  readonly schedules: PostgresSchedules;
  /** Shared rate limits (`RateLimitStore`). */
  readonly rateLimits: PostgresRateLimits;
  #opening: Promise<void> | undefined;

  constructor(options: PostgresBackendOptions = {}) {
    pgDriver(); // fails now, naming `npm install pg`, when the optional peer is missing
    const { schema, transactionIdleTimeoutMs } = checkOptions(options);
    this.#options = options;
    this.schema = schema;
    this.durability = options.durability ?? "machine";
    this.inlineLimitBytes = inlineLimit(options.inlineLimitBytes, "PostgresBackend");
    this.#db = new PostgresConnection(describeTarget(options, schema), transactionIdleTimeoutMs);
    this.#channel = wakeChannel(schema);
    const shared: PostgresShared = {
      db: this.#db,
      statements: statements(schema),
      channel: this.#channel,
      schema,
      durability: this.durability,
      inlineLimitBytes: this.inlineLimitBytes,
    };
    this.#runs = new PostgresRuns(shared);
    this.#imports = new PostgresImports(shared);
    this.#leases = new PostgresLeases(shared);
    this.#transitions = new PostgresTransitions(shared);
    this.#journal = new PostgresJournal(shared);
    this.#waits = new PostgresWaits(shared);
    this.#signals = new PostgresSignals(shared);
    this.#stops = new PostgresStops(shared);
    this.#feed = new PostgresFeed(shared);
    this.#forks = new PostgresForks(shared);
    this.#prune = new PostgresPrune(shared);
    this.schedules = new PostgresSchedules(shared);
    this.rateLimits = new PostgresRateLimits(shared);
  }

  /**
   * Connects, then applies pending migrations (or, with `migrate: false`, checks the schema).
   * Idempotent; after `close()` it opens a new pool.
   */
  async init(): Promise<void> {
    if (this.#db.pool) return;
    this.#opening ??= this.#open().finally(() => {
      this.#opening = undefined;
    });
    return this.#opening;
  }

  /** Ends the pool the backend made (a pool passed in is left open). */
  async close(): Promise<void> {
    const pool = this.#db.pool;
    this.#db.pool = undefined;
    if (pool && pool !== this.#options.pool) await pool.end();
  }

  /**
   * Applies pending migrations now, whatever the `migrate` option and whether or not the backend
   * is open: what a deployment step (a future `cairn migrate`) runs as a role that may create
   * tables. Returns the version found and the version left.
   */
  async migrate(): Promise<MigrationResult> {
    const pool = this.#db.pool ?? this.#options.pool ?? makePool(this.#options);
    try {
      return await this.#db.withClient(
        "migrate",
        (client) => applyMigrations(client, this.schema, this.#db.begin),
        pool,
      );
    } finally {
      if (pool !== this.#db.pool && pool !== this.#options.pool) await pool.end().catch(() => undefined);
    }
  }

  async #open(): Promise<void> {
    const pool = this.#options.pool ?? makePool(this.#options);
    try {
      await this.#db.withClient(
        "init",
        async (client) => {
          if (this.#options.migrate === false) await checkSchema(client, this.schema);
          else await applyMigrations(client, this.schema, this.#db.begin);
        },
        pool,
      );
    } catch (error) {
      if (pool !== this.#options.pool) await pool.end().catch(() => undefined);
      throw error;
    }
    this.#db.pool = pool;
  }

  createRun(input: CreateRunInput): Promise<CreateRunResult> {
    return this.#runs.createRun(input);
  }

  importRun(input: ImportRunInput): Promise<ImportRunResult> {
    return this.#imports.importRun(input);
  }

  getRun(runId: string): Promise<RunRecord | undefined> {
    return this.#runs.getRun(runId);
  }

  countRuns(now: number): Promise<RunCounts> {
    return this.#runs.countRuns(now);
  }

  listRuns(filter: RunFilter = {}): Promise<RunRecord[]> {
    return this.#runs.listRuns(filter);
  }

  recordAcceptance(runId: string, acceptance: AcceptanceRecord): Promise<RunRecord> {
    return this.#runs.recordAcceptance(runId, acceptance);
  }

  claimRun(request: ClaimRequest): Promise<RunRecord | undefined> {
    return this.#leases.claimRun(request);
  }

  claimRuns(request: ClaimManyRequest): Promise<ClaimedRun[]> {
    return this.#leases.claimRuns(request);
  }

  renewLeases(request: RenewRequest): Promise<string[]> {
    return this.#leases.renewLeases(request);
  }

  listExpiredLeases(now: number, limit: number): Promise<RunRecord[]> {
    return this.#leases.listExpiredLeases(now, limit);
  }

  listRecoverable(maxRecoveries: number, limit: number): Promise<RunRecord[]> {
    return this.#leases.listRecoverable(maxRecoveries, limit);
  }

  /** See {@link PostgresTransitions.transition}: batched, moves first, then the planners. */
  transition(request: TransitionRequest): Promise<{ run: RunRecord; transition: TransitionRecord }> {
    return this.#transitions.transition(request);
  }

  listTransitions(runId: string): Promise<TransitionRecord[]> {
    return this.#transitions.listTransitions(runId);
  }

  saveSteps(steps: readonly StepRecord[], options: { epoch: number; sync: boolean }): Promise<void> {
    return this.#journal.saveSteps(steps, options);
  }

  loadSteps(runId: string): Promise<StepRecord[]> {
    return this.#journal.loadSteps(runId);
  }

  suspend(request: SuspendRequest): Promise<SuspendResult> {
    return this.#waits.suspend(request);
  }

  loadWaits(runId: string): Promise<WaitRecord[]> {
    return this.#waits.loadWaits(runId);
  }

  resolveWait(request: ResolveWaitRequest): Promise<ResolveWaitResult> {
    return this.#waits.resolveWait(request);
  }

  fireDueWaits(now: number, limit: number): Promise<WaitRecord[]> {
    return this.#waits.fireDueWaits(now, limit);
  }

  nextDueAt(): Promise<number | null> {
    return this.#waits.nextDueAt();
  }

  resolveEndedChildWaits(now: number, limit: number): Promise<WaitRecord[]> {
    return this.#waits.resolveEndedChildWaits(now, limit);
  }

  deliverSignal(request: SignalRequest): Promise<SignalResult> {
    return this.#signals.deliverSignal(request);
  }

  listSignals(runId: string): Promise<SignalRecord[]> {
    return this.#signals.listSignals(runId);
  }

  requestStop(request: StopRunRequest): Promise<{ run: RunRecord; transitions: TransitionRecord[] }> {
    return this.#stops.requestStop(request);
  }

  listStopRequested(workerId: string): Promise<string[]> {
    return this.#stops.listStopRequested(workerId);
  }

  /**
   * Wake-ups over LISTEN/NOTIFY on one dedicated connection (outside the pool), re-established
   * with backoff when it drops, after which the listener hears `reconnected`.
   */
  subscribe(listener: (wake: Wake) => void): Promise<() => Promise<void>> {
    return listenForWakeUps(this.#db, this.#channel, listener);
  }

  listTransitionsSince(request: TransitionFeedRequest): Promise<TransitionFeedPage> {
    return this.#feed.listTransitionsSince(request);
  }

  latestTransitionCursor(): Promise<string> {
    return this.#feed.latestTransitionCursor();
  }

  forkRun(request: ForkRunRequest): Promise<ForkRunResult> {
    return this.#forks.forkRun(request);
  }

  /** See {@link PostgresPrune}: one short transaction per batch, the runs it takes locked with `SKIP LOCKED`. */
  pruneRuns(request: PruneRunsRequest): Promise<PruneRunsResult> {
    return this.#prune.pruneRuns(request);
  }
}
