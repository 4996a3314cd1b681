import pg from "pg";
import { InvalidDefinitionError, InvalidInputError, LeaseLostError, StorageError } from "../../core/errors.ts";
import type {
  AcceptanceRecord,
  RunRecord,
  SignalRecord,
  StepRecord,
  TransitionRecord,
  WaitRecord,
} from "../../core/records.ts";
import type {
  ClaimedRun,
  ClaimManyRequest,
  ClaimRequest,
  CreateRunInput,
  CreateRunResult,
  RenewRequest,
  ResolveWaitRequest,
  ResolveWaitResult,
  RunFilter,
  RuntimeBackend,
  SignalRequest,
  SignalResult,
  StopRunRequest,
  SuspendRequest,
  SuspendResult,
  TransitionFeedPage,
  TransitionFeedRequest,
  TransitionRequest,
  Wake,
} from "../backend.ts";
import { inlineLimit } from "../rows/blob-payloads.ts";
import { RUN_COLUMNS, type RunRow, rowToRun, runValues } from "../rows/run-rows.ts";
import { rowToSignal, type SignalRow } from "../rows/signal-rows.ts";
import { rowToStep, type StepRow, stepBlobDigests } from "../rows/step-rows.ts";
import {
  rowToTransition,
  TRANSITION_VALUE_COLUMNS,
  type TransitionRow,
  transitionParams,
} from "../rows/transition-rows.ts";
import { rowToWait, type WaitRow } from "../rows/wait-rows.ts";
import { claimed, isClaimable } from "../rules/lease-rules.ts";
import { applyAcceptance, pendingRun } from "../rules/run-rules.ts";
import { CommitBatcher, type Settled, settle } from "./postgres-batcher.ts";
import { makePool, PostgresConnection, type Queryable } from "./postgres-connection.ts";
import { describeTarget, isConnectionError, type PostgresTarget } from "./postgres-errors.ts";
import { WakeListener, wakeChannel, wakePayload } from "./postgres-listener.ts";
import { applyMigrations, checkSchema, type MigrationResult } from "./postgres-migrations.ts";
import type { PostgresBackendOptions } from "./postgres-options.ts";
import { foldJournal, type JournalRow, journalWrite, recordsetJson } from "./postgres-schema.ts";
import { type Sql, type Statements, statements } from "./postgres-statements.ts";
import { type StepWrite, stepBatcher } from "./postgres-step-batch.ts";
import { movedIn, type TransitionOutcome, transitionsIn } from "./postgres-transitions.ts";
import {
  deliverSignalIn,
  fireDueIn,
  type PlanContext,
  requestStopIn,
  resolveWaitIn,
  suspendIn,
  sweepChildWaitsIn,
} from "./postgres-waits.ts";

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
 * transaction that locks the run row first (see `postgres-waits.ts` for the lock order).
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
  readonly #target: PostgresTarget;
  readonly #s: Statements;
  readonly #channel: string;
  /** Statements, connections and transactions, their failures named. */
  readonly #db: PostgresConnection;
  readonly #listRuns = new Map<string, Sql>();
  #pool: pg.Pool | undefined;
  /** Step writes of all runs, batched into shared commits. */
  #steps: CommitBatcher<StepWrite, void> | undefined;
  /** Runs created at once, written by one statement. */
  #creates: CommitBatcher<CreateRunInput, CreateRunResult> | undefined;
  /** `getRun` calls made at once, read by one statement. */
  #reads: CommitBatcher<string, RunRecord | undefined> | undefined;
  /** Transitions of all runs, batched into shared transactions. */
  #transitions: CommitBatcher<TransitionRequest, TransitionOutcome> | undefined;
  #opening: Promise<void> | undefined;

  constructor(options: PostgresBackendOptions = {}) {
    const schema = options.schema ?? "cairn";
    if (schema === "" || Buffer.byteLength(schema) > 63 || schema.includes("\u0000")) {
      throw new InvalidDefinitionError(
        `PostgresBackend schema "${schema}" is not a usable PostgreSQL name; use 1 to 63 bytes without NUL`,
      );
    }
    if (options.pool && options.connectionString !== undefined) {
      throw new InvalidDefinitionError("PostgresBackend takes connectionString or pool, not both");
    }
    if (options.max !== undefined && !(Number.isInteger(options.max) && options.max >= 1)) {
      throw new InvalidDefinitionError(`PostgresBackend max must be a whole number of at least 1, got ${options.max}`);
    }
    const idleMs = options.transactionIdleTimeoutMs ?? 10_000;
    if (!(Number.isInteger(idleMs) && idleMs >= 0 && idleMs <= 2 ** 31 - 1)) {
      throw new InvalidDefinitionError(
        `PostgresBackend transactionIdleTimeoutMs must be a whole number of milliseconds from 0 (off) to 2147483647, got ${idleMs}`,
      );
    }
    this.#options = options;
    this.schema = schema;
    this.durability = options.durability ?? "machine";
    this.inlineLimitBytes = inlineLimit(options.inlineLimitBytes, "PostgresBackend");
    this.#target = describeTarget(options, schema);
    this.#db = new PostgresConnection(this.#target, idleMs);
    this.#s = statements(schema);
    this.#channel = wakeChannel(schema);
  }

  /**
   * Connects, then applies pending migrations (or, with `migrate: false`, checks the schema).
   * Idempotent; after `close()` it opens a new pool.
   */
  async init(): Promise<void> {
    if (this.#pool) return;
    this.#opening ??= this.#open().finally(() => {
      this.#opening = undefined;
    });
    return this.#opening;
  }

  /** Ends the pool the backend made (a pool passed in is left open). */
  async close(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    this.#listRuns.clear();
    if (pool && pool !== this.#options.pool) await pool.end();
  }

  /**
   * Applies pending migrations now, whatever the `migrate` option and whether or not the backend
   * is open: what a deployment step (a future `cairn migrate`) runs as a role that may create
   * tables. Returns the version found and the version left.
   */
  async migrate(): Promise<MigrationResult> {
    const pool = this.#pool ?? this.#options.pool ?? makePool(this.#options);
    try {
      return await this.#db.withClient(
        "migrate",
        (client) => applyMigrations(client, this.schema, this.#db.begin),
        pool,
      );
    } finally {
      if (pool !== this.#pool && pool !== this.#options.pool) await pool.end().catch(() => undefined);
    }
  }

  /**
   * Runs created at once by one process share a statement and a commit ({@link CommitBatcher}):
   * an application that starts fifty runs writes them together. A run the batch could not write
   * (its key names a run already, or its id is taken) is tried again alone, which says which.
   */
  async createRun(input: CreateRunInput): Promise<CreateRunResult> {
    this.#ready();
    this.#creates ??= new CommitBatcher({
      key: (i: CreateRunInput) =>
        i.key === null ? `id\u0000${i.id}` : `key\u0000${i.agent}\u0000${i.workflow}\u0000${i.key}`,
      run: (batch) => this.#createBatch(batch),
    });
    return this.#creates.submit(input);
  }

  async #createBatch(batch: readonly CreateRunInput[]): Promise<Settled<CreateRunResult>[]> {
    if (batch.length === 1) return [await settle(this.#createOne(batch[0] as CreateRunInput))];
    const pool = this.#ready();
    const pending = batch.map((input) => pendingRun(input));
    const written = await this.#db.call("createRun", () =>
      this.#db.query<{ run_id: string }>(pool, this.#s.createRuns, [
        recordsetJson(
          pending.map((p) => runValues(p.run)),
          RUN_COLUMNS,
        ),
        recordsetJson(
          pending.map((p) => [...transitionParams(p.transition), wakePayload({ kind: "runnable", runId: p.run.id })]),
          [...TRANSITION_VALUE_COLUMNS, "wake"],
        ),
        this.#channel,
      ]),
    );
    const stored = new Set(written.map((row) => row.run_id));
    return Promise.all(
      pending.map(({ run, transition }, i) =>
        stored.has(run.id)
          ? { ok: true as const, value: { run, created: true as const, transition } }
          : settle(this.#createOne(batch[i] as CreateRunInput)),
      ),
    );
  }

  async #createOne(input: CreateRunInput): Promise<CreateRunResult> {
    const pool = this.#ready();
    const { run, transition } = pendingRun(input);
    return this.#db.call("createRun", async () => {
      const written = await this.#db.query(pool, this.#s.createRun, [
        ...runValues(run),
        ...transitionParams(transition).slice(1),
        this.#channel,
        wakePayload({ kind: "runnable", runId: run.id }),
      ]);
      if (written.length === 1) return { run, created: true, transition };
      // Nothing written: the key names a run already, or the id is taken.
      if (input.key !== null) {
        const [row] = await this.#db.query<RunRow>(pool, this.#s.getRunByKey, [input.agent, input.workflow, input.key]);
        if (row) return { run: rowToRun(row), created: false };
      }
      throw new InvalidInputError(
        `run id "${input.id}" already exists in schema "${this.schema}"; run ids must be unique`,
      );
    });
  }

  /** Reads made at once share a statement ({@link CommitBatcher}), as the waiters of fifty runs do. */
  async getRun(runId: string): Promise<RunRecord | undefined> {
    this.#ready();
    this.#reads ??= new CommitBatcher({ run: (ids: readonly string[]) => this.#readBatch(ids) });
    return this.#reads.submit(runId);
  }

  async #readBatch(ids: readonly string[]): Promise<Settled<RunRecord | undefined>[]> {
    const pool = this.#ready();
    const rows =
      ids.length === 1
        ? await this.#db.call("getRun", () => this.#db.query<RunRow>(pool, this.#s.getRun, [ids[0]]))
        : await this.#db.call("getRun", () => this.#db.query<RunRow>(pool, this.#s.getRuns, [ids]));
    const byId = new Map(rows.map((row) => [row.id, row]));
    return ids.map((id) => {
      const row = byId.get(id);
      return { ok: true, value: row && rowToRun(row) };
    });
  }

  async listRuns(filter: RunFilter = {}): Promise<RunRecord[]> {
    const pool = this.#ready();
    const where: string[] = [];
    const values: unknown[] = [];
    if (filter.agent !== undefined) {
      values.push(filter.agent);
      where.push(`agent = $${values.length}`);
    }
    if (filter.workflow !== undefined) {
      values.push(filter.workflow);
      where.push(`workflow = $${values.length}`);
    }
    if (filter.state !== undefined) {
      values.push([filter.state].flat());
      where.push(`state = ANY ($${values.length}::text[])`);
    }
    if (filter.parentRunId !== undefined) {
      values.push(filter.parentRunId);
      where.push(`parent_run_id = $${values.length}`);
    }
    const key = where.join(" AND ");
    let statement = this.#listRuns.get(key);
    if (!statement) {
      statement = this.#s.listRuns(key, values.length + 1);
      this.#listRuns.set(key, statement);
    }
    values.push(filter.limit ?? 100, filter.offset ?? 0);
    const sql = statement;
    return this.#db.call("listRuns", async () => (await this.#db.query<RunRow>(pool, sql, values)).map(rowToRun));
  }

  async claimRun(request: ClaimRequest): Promise<RunRecord | undefined> {
    const pool = this.#ready();
    return this.#db.transaction(pool, "claimRun", async (client) => {
      // A named run is waited for when another transaction holds it (it may be claimable once
      // that commits); the next runnable run skips the ones other workers are claiming.
      const [row] =
        request.runId === undefined
          ? await this.#db.query<RunRow>(client, this.#s.claimNext, [request.now, request.agents ?? null])
          : await this.#db.query<RunRow>(client, this.#s.lockRun, [request.runId]);
      if (!row) return undefined;
      const run = rowToRun(row);
      if (!isClaimable(run, request.now, request.agents, request.runId === undefined ? undefined : request.takeover)) {
        return undefined;
      }
      const next = claimed(run, request.workerId, request.now, request.leaseMs);
      await this.#db.query(client, this.#s.setLease, [
        next.id,
        next.epoch,
        next.leaseOwner,
        next.leaseExpiresAt,
        next.updatedAt,
      ]);
      return next;
    });
  }

  async claimRuns(request: ClaimManyRequest): Promise<ClaimedRun[]> {
    const pool = this.#ready();
    if (!(request.limit >= 1)) return [];
    // One statement picks the oldest runnable runs other claimers are not locking, leases them and
    // moves the PENDING ones to RUNNING (with `start`): one round trip, one commit.
    const { start } = request;
    const rows = await this.#db.call("claimRuns", () =>
      this.#db.query<RunRow & { started: boolean }>(pool, this.#s.claimRuns, [
        request.now,
        request.agents ?? null,
        request.limit,
        request.workerId,
        request.now + request.leaseMs,
        start ? JSON.stringify(start.versions) : null,
        start?.actor.kind ?? null,
        start?.actor.id ?? null,
        start?.reason ?? null,
      ]),
    );
    return rows
      .map(({ started, ...row }): ClaimedRun => {
        const run = rowToRun(row);
        const versions = start && started ? start.versions[run.agent] : undefined;
        if (!start || !versions) return { run };
        return {
          run,
          started: {
            runId: run.id,
            id: run.lastTransitionId,
            at: request.now,
            actor: start.actor,
            from: "PENDING",
            to: "RUNNING",
            pausedReason: null,
            reason: start.reason,
            versions,
          },
        };
      })
      .sort((a, b) => a.run.createdAt - b.run.createdAt || (a.run.id < b.run.id ? -1 : 1));
  }

  async renewLeases(request: RenewRequest): Promise<string[]> {
    const pool = this.#ready();
    if (request.runs.length === 0) return [];
    return this.#db.call("renewLeases", async () => {
      const renewed = await this.#db.query<{ id: string }>(pool, this.#s.renewLeases, [
        request.now + request.leaseMs,
        request.runs.map((r) => r.runId),
        request.runs.map((r) => r.epoch),
        request.workerId,
      ]);
      const kept = new Set(renewed.map((r) => r.id));
      return request.runs.filter((r) => !kept.has(r.runId)).map((r) => r.runId);
    });
  }

  async listExpiredLeases(now: number, limit: number): Promise<RunRecord[]> {
    const pool = this.#ready();
    return this.#db.call("listExpiredLeases", async () =>
      (await this.#db.query<RunRow>(pool, this.#s.listExpired, [now, limit])).map(rowToRun),
    );
  }

  async listRecoverable(maxRecoveries: number, limit: number): Promise<RunRecord[]> {
    const pool = this.#ready();
    return this.#db.call("listRecoverable", async () =>
      (await this.#db.query<RunRow>(pool, this.#s.listRecoverable, [maxRecoveries, limit])).map(rowToRun),
    );
  }

  /**
   * The transition and, into an ended state, what `planEnd` does (waits closed, the parent's child
   * wait resolved, children stopped, a successor created). Transitions of different runs that a
   * process asks for in the same turn of the event loop, or while another batch is being written,
   * are written together ({@link CommitBatcher}):
   *
   * - first those that need nothing but their run's row (fenced by the epoch, no successor, and
   *   for an end no parent, no open wait and no child still running: a worker's fifty runs that
   *   complete) in one statement and one commit (`moveRuns`, `postgres-transition-statements.ts`);
   * - then the others, and any the statement left unwritten (a fence that moved meanwhile, say),
   *   through the planners in one transaction (`transitionsIn`; see `postgres-transitions.ts` for
   *   the rows it locks and in what order). A transaction that fails for a reason other than the
   *   connection (one request's successor clashes with a taken id, say) rolls back and its
   *   requests are tried again one transaction each, so each caller gets the outcome it would have
   *   had alone.
   *
   * The requests of one batch were made concurrently, so either order of their commits is one
   * they could have had; the moved ones commit first.
   */
  async transition(request: TransitionRequest): Promise<{ run: RunRecord; transition: TransitionRecord }> {
    this.#ready();
    this.#transitions ??= new CommitBatcher({
      key: (r: TransitionRequest) => r.runId,
      run: (batch) => this.#transitionBatch(batch),
    });
    return this.#transitions.submit(request);
  }

  async #transitionBatch(batch: readonly TransitionRequest[]): Promise<Settled<TransitionOutcome>[]> {
    const pool = this.#ready();
    // First the requests that need nothing but their runs' rows, in one statement (`moveRuns`);
    // then, in a transaction, the others and those the statement left unwritten.
    let moved = new Map<string, TransitionOutcome>();
    try {
      moved = await this.#db.call("transition", () => movedIn(this.#context(pool), batch));
    } catch (error) {
      // A lost connection leaves the commit unknown: every caller hears of it, as it would alone.
      // Any other failure (one request's value the statement cannot take, say) wrote nothing: the
      // planners take the whole batch, and isolate the request that fails.
      if (isConnectionError((error as { cause?: unknown }).cause ?? error)) throw error;
    }
    const rest = batch.filter((request) => !moved.has(request.runId));
    // A failure of the transaction is the outcome of its requests alone: the moved ones are committed.
    const planned =
      rest.length === 0
        ? []
        : await this.#plannedBatch(rest).catch((error: unknown) =>
            rest.map((): Settled<TransitionOutcome> => ({ ok: false, error })),
          );
    let next = 0;
    return batch.map((request): Settled<TransitionOutcome> => {
      const value = moved.get(request.runId);
      if (value) return { ok: true, value };
      return planned[next++] ?? { ok: false, error: new StorageError("transition: the batch gave no outcome") };
    });
  }

  /** Transitions through the planners, in one transaction ({@link transitionsIn}). */
  async #plannedBatch(batch: readonly TransitionRequest[]): Promise<Settled<TransitionOutcome>[]> {
    const pool = this.#ready();
    const inTransaction = (requests: readonly TransitionRequest[]) =>
      this.#db.transaction(pool, "transition", (client) => transitionsIn(this.#context(client), requests));
    try {
      return await inTransaction(batch);
    } catch (error) {
      // A lost connection leaves the commit unknown: every caller hears of it, as it would alone.
      if (batch.length === 1 || isConnectionError((error as { cause?: unknown }).cause ?? error)) throw error;
      return Promise.all(
        batch.map((request) =>
          inTransaction([request]).then(
            ([outcome]): Settled<TransitionOutcome> =>
              outcome ?? { ok: false, error: new StorageError("transition: the batch gave no outcome") },
            (alone: unknown): Settled<TransitionOutcome> => ({ ok: false, error: alone }),
          ),
        ),
      );
    }
  }

  async suspend(request: SuspendRequest): Promise<SuspendResult> {
    const pool = this.#ready();
    return this.#db.transaction(pool, "suspend", (client) => suspendIn(this.#context(client), request));
  }

  async loadWaits(runId: string): Promise<WaitRecord[]> {
    const pool = this.#ready();
    return this.#db.call("loadWaits", async () =>
      (await this.#db.query<WaitRow>(pool, this.#s.loadWaits, [runId])).map(rowToWait),
    );
  }

  async resolveWait(request: ResolveWaitRequest): Promise<ResolveWaitResult> {
    const pool = this.#ready();
    return this.#db.transaction(pool, "resolveWait", (client) => resolveWaitIn(this.#context(client), request));
  }

  async deliverSignal(request: SignalRequest): Promise<SignalResult> {
    const pool = this.#ready();
    return this.#db.transaction(pool, "deliverSignal", (client) => deliverSignalIn(this.#context(client), request));
  }

  async listSignals(runId: string): Promise<SignalRecord[]> {
    const pool = this.#ready();
    return this.#db.call("listSignals", async () =>
      (await this.#db.query<SignalRow>(pool, this.#s.listSignals, [runId])).map(rowToSignal),
    );
  }

  /** One batch in one transaction; runs another transaction holds are skipped, not waited for. */
  async fireDueWaits(now: number, limit: number): Promise<WaitRecord[]> {
    const pool = this.#ready();
    return this.#db.transaction(pool, "fireDueWaits", (client) => fireDueIn(this.#context(client), now, limit));
  }

  /**
   * One read finds the runs to sweep (none, nearly always: a partial index of the open child waits
   * and a lookup of each wait's child and run); only when there are some does a transaction lock
   * them and resolve their waits ({@link sweepChildWaitsIn}).
   */
  async resolveEndedChildWaits(now: number, limit: number): Promise<WaitRecord[]> {
    const pool = this.#ready();
    const runIds = await this.#db.call("resolveEndedChildWaits", async () =>
      (await this.#db.query<{ run_id: string }>(pool, this.#s.endedChildWaitRuns, [Math.max(0, limit)])).map(
        (row) => row.run_id,
      ),
    );
    if (runIds.length === 0) return [];
    return this.#db.transaction(pool, "resolveEndedChildWaits", (client) =>
      sweepChildWaitsIn(this.#context(client), runIds, now),
    );
  }

  async nextDueAt(): Promise<number | null> {
    const pool = this.#ready();
    return this.#db.call("nextDueAt", async () => {
      const [row] = await this.#db.query<{ next: number | null }>(pool, this.#s.nextDueAt, []);
      return row?.next ?? null;
    });
  }

  async requestStop(request: StopRunRequest): Promise<{ run: RunRecord; transitions: TransitionRecord[] }> {
    const pool = this.#ready();
    return this.#db.transaction(pool, "requestStop", (client) => requestStopIn(this.#context(client), request));
  }

  /**
   * Oldest first. Only runs that have not ended are considered (a worker releases the lease of a
   * run it ends), which keeps the lookup on a small partial index.
   */
  async listStopRequested(workerId: string): Promise<string[]> {
    const pool = this.#ready();
    return this.#db.call("listStopRequested", async () =>
      (await this.#db.query<{ id: string }>(pool, this.#s.listStopRequested, [workerId])).map((r) => r.id),
    );
  }

  /**
   * One statement when the verdict is taken (the run COMPLETED and without one); otherwise the run
   * is read again to word the refusal (`applyAcceptance`).
   */
  async recordAcceptance(runId: string, acceptance: AcceptanceRecord): Promise<RunRecord> {
    const pool = this.#ready();
    return this.#db.call("recordAcceptance", async () => {
      const [row] = await this.#db.query<RunRow>(pool, this.#s.acceptRun, [runId, JSON.stringify(acceptance)]);
      if (row) return rowToRun(row);
      const [current] = await this.#db.query<RunRow>(pool, this.#s.getRun, [runId]);
      applyAcceptance(current && rowToRun(current), runId, acceptance);
      // Unreachable while the statement and the rule agree: a refusal is thrown above.
      throw new StorageError(`run ${runId}: the acceptance was not stored, and nothing refuses it; try again`);
    });
  }

  /**
   * Wake-ups over LISTEN/NOTIFY on one dedicated connection (outside the pool), re-established
   * with backoff when it drops, after which the listener hears `reconnected`.
   */
  async subscribe(listener: (wake: Wake) => void): Promise<() => Promise<void>> {
    const pool = this.#ready();
    const wakeListener = new WakeListener({
      channel: this.#channel,
      onWake: listener,
      connect: () => {
        const client = new pg.Client({ ...pool.options, application_name: "cairn-listener" });
        client.on("error", () => {});
        return client;
      },
    });
    await this.#db.call("subscribe", () => wakeListener.start());
    return () => wakeListener.stop();
  }

  async listTransitions(runId: string): Promise<TransitionRecord[]> {
    const pool = this.#ready();
    return this.#db.call("listTransitions", async () =>
      (await this.#db.query<TransitionRow>(pool, this.#s.listTransitions, [runId])).map(rowToTransition),
    );
  }

  /**
   * Ordered by (feed_key, run id, transition id), and only as far as the snapshot's xmin: see
   * `feed_key` in `postgres-statements.ts` and DESIGN §7. A cursor is `<feed_key>.<id>.<run id in
   * base64url>`; the start is `0.0.`, before the rows migration 4 found (feed_key 0).
   */
  async listTransitionsSince(request: TransitionFeedRequest): Promise<TransitionFeedPage> {
    const pool = this.#ready();
    const after = parseFeedCursor(request.after ?? FEED_START);
    return this.#db.call("listTransitionsSince", async () => {
      const rows = await this.#db.query<TransitionRow & { feed_key: string; run_agent: string; run_workflow: string }>(
        pool,
        this.#s.feedAfter,
        [after.key, after.runId, after.id, Math.max(0, request.limit)],
      );
      const transitions = rows.map((row) => ({
        cursor: feedCursor(row.feed_key, row.run_id, row.id),
        transition: rowToTransition(row),
        agent: row.run_agent,
        workflow: row.run_workflow,
      }));
      return { transitions, cursor: transitions.at(-1)?.cursor ?? request.after ?? FEED_START };
    });
  }

  async latestTransitionCursor(): Promise<string> {
    const pool = this.#ready();
    return this.#db.call("latestTransitionCursor", async () => {
      const [row] = await this.#db.query<{ feed_key: string; run_id: string; id: number }>(
        pool,
        this.#s.feedLatest,
        [],
      );
      return row ? feedCursor(row.feed_key, row.run_id, row.id) : FEED_START;
    });
  }

  async saveSteps(steps: readonly StepRecord[], options: { epoch: number; sync: boolean }): Promise<void> {
    this.#ready();
    const first = steps[0];
    if (!first) return;
    if (steps.some((step) => step.runId !== first.runId)) {
      throw new InvalidInputError("saveSteps takes the steps of one run");
    }
    this.#steps ??= stepBatcher({
      write: (batch) =>
        this.#db.call("saveSteps", async () => {
          const pool = this.#ready();
          const level = batch.some((w) => w.sync) && this.durability === "machine" ? null : "off";
          const { entries, blobs } = journalWrite(batch, this.inlineLimitBytes);
          const [one] = entries;
          if (one && entries.length === 1) {
            const written = await this.#db.query<{ run_id: string }>(pool, this.#s.saveSteps, [
              one.run_id,
              one.epoch,
              level,
              JSON.stringify(one.steps),
              ...blobs,
            ]);
            return new Set(written.map((row) => row.run_id));
          }
          const runIds = batch.map((w) => w.runId);
          const refused = await this.#db.query<{ run_id: string }>(pool, this.#s.saveStepBatch, [
            runIds,
            batch.map((w) => w.epoch),
            level,
            JSON.stringify(entries),
            ...blobs,
          ]);
          const stored = new Set(runIds);
          for (const row of refused) stored.delete(row.run_id);
          return stored;
        }),
      // The fence refused the write, which therefore changed nothing; the epoch read now only
      // words the error.
      refused: (write) =>
        this.#db.call("saveSteps", async () => {
          const pool = this.#ready();
          const seq = write.steps[0]?.seq;
          const [run] = await this.#db.query<{ epoch: number }>(pool, this.#s.getEpoch, [write.runId]);
          if (!run) return new LeaseLostError(`run ${write.runId} does not exist; step ${seq} not saved`);
          return new LeaseLostError(
            `run ${write.runId}: step ${seq} under lease epoch ${write.epoch} refused, the run is at epoch ${run.epoch}; this worker lost the run`,
          );
        }),
    });
    return this.#steps.submit({ runId: first.runId, epoch: options.epoch, steps, sync: options.sync });
  }

  async loadSteps(runId: string): Promise<StepRecord[]> {
    const pool = this.#ready();
    return this.#db.call("loadSteps", async () => {
      const [older, entries] = await Promise.all([
        this.#db.query<StepRow>(pool, this.#s.loadSteps, [runId]),
        this.#db.query<JournalRow>(pool, this.#s.loadJournal, [runId]),
      ]);
      const rows = foldJournal(runId, older, entries);
      const digests = stepBlobDigests(rows);
      // A second query outside a transaction is safe: blobs are committed with the steps that
      // refer to them and never change.
      const blobs =
        digests.length === 0
          ? undefined
          : new Map(
              (await this.#db.query<{ digest: string; text: string }>(pool, this.#s.loadBlobs, [digests])).map(
                (b) => [b.digest, b.text] as const,
              ),
            );
      return rows.map((row) => rowToStep(row, blobs));
    });
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
    this.#pool = pool;
  }

  #ready(): pg.Pool {
    if (!this.#pool) {
      throw new StorageError(
        `PostgresBackend for ${this.#target.url} (schema "${this.schema}") is not open; call init() first (and not after close())`,
      );
    }
    return this.#pool;
  }

  /** What the plan operations of `postgres-waits.ts` need, on the transaction's connection. */
  #context(on: Queryable): PlanContext {
    return {
      query: (statement, values) => this.#db.query(on, statement, values),
      statements: this.#s,
      channel: this.#channel,
      inlineLimitBytes: this.inlineLimitBytes,
    };
  }
}

/** The feed's start: before every transition (those that migration 4 found have feed_key 0). */
const FEED_START = "0.0.";

function feedCursor(key: string, runId: string, id: number): string {
  return `${key}.${id}.${Buffer.from(runId, "utf8").toString("base64url")}`;
}

function parseFeedCursor(cursor: string): { key: string; runId: string; id: number } {
  const match = /^(\d{1,20})\.(\d{1,10})\.([\w-]*)$/.exec(cursor);
  const [, key = "", id = "", runId = ""] = match ?? [];
  if (!match || BigInt(key) >= 2n ** 64n || Number(id) > 2 ** 31 - 1) {
    throw new InvalidInputError(`"${cursor}" is not a cursor of a PostgreSQL transition feed`);
  }
  return { key, id: Number(id), runId: Buffer.from(runId, "base64url").toString("utf8") };
}
