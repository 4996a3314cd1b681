import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import { InvalidInputError, StorageError } from "../../core/errors.ts";
import type {
  AcceptanceRecord,
  RunRecord,
  SignalRecord,
  StepRecord,
  TransitionRecord,
  WaitRecord,
} from "../../core/records.ts";
import type {
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
} from "../backend.ts";
import { inlineLimit } from "../rows/blob-payloads.ts";
import { type RunRow, rowToRun } from "../rows/run-rows.ts";
import { rowToSignal } from "../rows/signal-rows.ts";
import { encodeStep, rowToStep, stepBlobDigests } from "../rows/step-rows.ts";
import { rowToTransition } from "../rows/transition-rows.ts";
import { rowToWait } from "../rows/wait-rows.ts";
import { toStorageError } from "./sqlite-errors.ts";
import { migrate } from "./sqlite-schema.ts";
import { type Db, prepareStatements, type Statements, type Stmt, saveStepFenced } from "./sqlite-statements.ts";
import { prepareTransactions, type Transactions } from "./sqlite-transactions.ts";

/** Options of {@link SqliteBackend}. */
export interface SqliteBackendOptions {
  /**
   * Path of the database file; the file and its parent directory are created when missing.
   * `":memory:"` gives a private in-memory database that is gone when the backend closes.
   */
  path: string;
  /**
   * What a committed checkpoint survives. `"machine"`: a power loss or kernel crash, because
   * every completed step, transition and new run, and every write of waits, signals and stops is
   * fsynced (`synchronous=FULL`); start records, heartbeats, claims and lease renewals ride on
   * cheaper commits that a later fsync covers (a claim is always followed by a transition). `"process"`: a crash of the process only; nothing
   * is fsynced on commit (`synchronous=NORMAL` throughout), which is several times faster.
   * @default "machine"
   */
  durability?: "process" | "machine";
  /**
   * How long a write waits for another connection (another process on the same file) to release
   * the write lock before it fails with a `StorageError`.
   * @default 5000
   */
  busyTimeoutMs?: number;
  /**
   * Bytes of JSON text above which a step's arguments or result are stored out of line: once per
   * content in the `blobs` table (keyed by sha-256), with a small reference in the step's row,
   * written in the same transaction. `loadSteps` returns the full values.
   * @default 262144 (256 KiB)
   */
  inlineLimitBytes?: number;
}

/** A value of SQLite's `synchronous` setting. */
export type SqliteSynchronous = "OFF" | "NORMAL" | "FULL" | "EXTRA";

/**
 * Stores runs in one SQLite file through better-sqlite3 (WAL mode): embedded, no server. Several
 * processes may share the file; every write takes the write lock up front (`BEGIN IMMEDIATE`), so
 * their claims and fences are as exclusive as in one process.
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
  #db: Db | undefined;
  /** The file's feed id (`cairn_meta.feed_id`): the first part of its feed cursors. */
  #feedId = "";
  #s: Statements | undefined;
  #tx: Transactions | undefined;
  /**
   * The connection's current `synchronous` level. A write switches it only when it needs the
   * other level, so a run of heartbeats costs no pragma at all.
   */
  #sync: "FULL" | "NORMAL" = "FULL";
  readonly #listRuns = new Map<string, Stmt<[Record<string, unknown>], RunRow>>();

  constructor(options: SqliteBackendOptions) {
    this.path = options.path;
    this.durability = options.durability ?? "machine";
    this.#busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    this.inlineLimitBytes = inlineLimit(options.inlineLimitBytes, "SqliteBackend");
  }

  /** Opens the file, sets WAL, the busy timeout and foreign keys, and creates or checks the schema. */
  async init(): Promise<void> {
    if (this.#db) return;
    const memory = this.path === ":memory:" || this.path === "";
    let db: Db | undefined;
    try {
      if (!memory) mkdirSync(dirname(resolve(this.path)), { recursive: true });
      db = new Database(this.path, { timeout: this.#busyTimeoutMs });
      if (!memory) {
        const mode = db.pragma("journal_mode = WAL", { simple: true });
        if (mode !== "wal") {
          throw new StorageError(`"${this.path}" cannot use WAL mode (it is in ${String(mode)} mode)`);
        }
      }
      db.pragma("foreign_keys = ON");
      this.#sync = this.durability === "machine" ? "FULL" : "NORMAL";
      db.pragma(`synchronous = ${this.#sync}`);
      migrate(db, this.path);
      this.#feedId = db.prepare<[], string>("SELECT value FROM cairn_meta WHERE key = 'feed_id'").pluck().get() ?? "";
      this.#s = prepareStatements(db);
      this.#db = db;
      this.#tx = prepareTransactions(db, this.#s, this.path, this.inlineLimitBytes);
    } catch (error) {
      db?.close();
      throw toStorageError(error, this.path, "open");
    }
  }

  async close(): Promise<void> {
    const db = this.#db;
    this.#db = undefined;
    this.#s = undefined;
    this.#tx = undefined;
    this.#listRuns.clear();
    if (db?.open) db.close();
  }

  /**
   * The connection's `synchronous` setting as SQLite reports it, for diagnostics and tests:
   * FULL when the last write had to be durable against a machine crash, NORMAL otherwise.
   */
  get synchronous(): SqliteSynchronous {
    const level = this.#open().db.pragma("synchronous", { simple: true });
    return (["OFF", "NORMAL", "FULL", "EXTRA"] as const)[level as number] ?? "OFF";
  }

  async createRun(input: CreateRunInput): Promise<CreateRunResult> {
    const { tx } = this.#open();
    return this.#write(true, "createRun", () => tx.createRun.immediate(input));
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const { s } = this.#open();
    return this.#read("getRun", () => {
      const row = s.getRun.get(runId);
      return row && rowToRun(row);
    });
  }

  async listRuns(filter: RunFilter = {}): Promise<RunRecord[]> {
    const { db } = this.#open();
    return this.#read("listRuns", () => {
      const params: Record<string, unknown> = { limit: filter.limit ?? 100, offset: filter.offset ?? 0 };
      const where: string[] = [];
      if (filter.agent !== undefined) {
        where.push("agent = @agent");
        params.agent = filter.agent;
      }
      if (filter.parentRunId !== undefined) {
        where.push("parent_run_id = @parentRunId");
        params.parentRunId = filter.parentRunId;
      }
      if (filter.workflow !== undefined) {
        where.push("workflow = @workflow");
        params.workflow = filter.workflow;
      }
      if (filter.state !== undefined) {
        where.push("state IN (SELECT value FROM json_each(@states))");
        params.states = JSON.stringify([filter.state].flat());
      }
      const sql = `SELECT * FROM runs ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
        ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`;
      let stmt = this.#listRuns.get(sql);
      if (!stmt) {
        stmt = db.prepare<[Record<string, unknown>], RunRow>(sql);
        this.#listRuns.set(sql, stmt);
      }
      return stmt.all(params).map(rowToRun);
    });
  }

  async claimRun(request: ClaimRequest): Promise<RunRecord | undefined> {
    const { tx } = this.#open();
    // Not fsynced: a worker follows every claim with a synchronous transition (RUNNING, or the
    // end of a cancellation), whose fsync covers the claim (WAL order). A power loss before it
    // loses a claim whose workers died with the machine: the run is simply claimable again.
    return this.#write(false, "claimRun", () => tx.claim.immediate(request));
  }

  async renewLeases(request: RenewRequest): Promise<string[]> {
    const { tx } = this.#open();
    // NORMAL is enough: a renewal lost to a machine crash only matters to the worker that made
    // it, and that worker died with the machine.
    return this.#write(false, "renewLeases", () => tx.renew.immediate(request));
  }

  async listExpiredLeases(now: number, limit: number): Promise<RunRecord[]> {
    const { s } = this.#open();
    return this.#read("listExpiredLeases", () => s.listExpired.all(now, limit).map(rowToRun));
  }

  async listRecoverable(maxRecoveries: number, limit: number): Promise<RunRecord[]> {
    const { s } = this.#open();
    return this.#read("listRecoverable", () => s.listRecoverable.all(maxRecoveries, limit).map(rowToRun));
  }

  async transition(request: TransitionRequest): Promise<{ run: RunRecord; transition: TransitionRecord }> {
    const { tx } = this.#open();
    return this.#write(true, "transition", () => tx.transition.immediate(request));
  }

  async listTransitions(runId: string): Promise<TransitionRecord[]> {
    const { s } = this.#open();
    return this.#read("listTransitions", () => s.listTransitions.all(runId).map(rowToTransition));
  }

  /**
   * In commit order: a transition's cursor is `<feed id>.<feed_position>` (see `MIGRATION_V4`),
   * and one statement reads a snapshot that holds every position up to some number.
   */
  async listTransitionsSince(request: TransitionFeedRequest): Promise<TransitionFeedPage> {
    const { s } = this.#open();
    const after = request.after === null ? 0 : this.#feedPosition(request.after);
    return this.#read("listTransitionsSince", () => {
      const transitions = s.feedAfter.all(after, Math.max(0, request.limit)).map((row) => ({
        cursor: `${this.#feedId}.${row.feed_position}`,
        transition: rowToTransition(row),
        agent: row.run_agent,
        workflow: row.run_workflow,
      }));
      return { transitions, cursor: transitions.at(-1)?.cursor ?? `${this.#feedId}.${after}` };
    });
  }

  async latestTransitionCursor(): Promise<string> {
    const { s } = this.#open();
    return this.#read("latestTransitionCursor", () => `${this.#feedId}.${s.feedLatest.get() ?? 0}`);
  }

  /** The feed position of a cursor of this file. */
  #feedPosition(cursor: string): number {
    const match = /^([0-9a-f]+)\.(\d{1,15})$/.exec(cursor);
    if (!match || match[1] !== this.#feedId) {
      throw new InvalidInputError(`"${cursor}" is not a cursor of the transition feed of "${this.path}"`);
    }
    return Number(match[2]);
  }

  async saveSteps(steps: readonly StepRecord[], options: { epoch: number; sync: boolean }): Promise<void> {
    const { s, tx } = this.#open();
    if (steps.length === 0) return;
    this.#write(options.sync, "saveSteps", () => {
      const encoded = steps.map((step) => ({ step, encoded: encodeStep(step, this.inlineLimitBytes) }));
      const [only] = encoded;
      // One step without blobs: fence and upsert are one statement, so one transaction without
      // BEGIN. Otherwise one immediate transaction, rolled back whole if the fence refuses any.
      if (encoded.length === 1 && only && only.encoded.blobs.length === 0) {
        saveStepFenced(s, only.step, only.encoded, options.epoch);
      } else {
        tx.saveSteps.immediate(encoded, options.epoch);
      }
    });
  }

  async loadSteps(runId: string): Promise<StepRecord[]> {
    const { s } = this.#open();
    return this.#read("loadSteps", () => {
      const rows = s.loadSteps.all(runId);
      const digests = stepBlobDigests(rows);
      // A second read outside a transaction is safe: blobs are written with the steps that refer
      // to them and never change.
      const blobs =
        digests.length === 0
          ? undefined
          : new Map(s.loadBlobs.all(JSON.stringify(digests)).map((b) => [b.digest, b.text] as const));
      return rows.map((row) => rowToStep(row, blobs));
    });
  }

  async suspend(request: SuspendRequest): Promise<SuspendResult> {
    const { tx } = this.#open();
    return this.#write(true, "suspend", () => tx.suspend.immediate(request));
  }

  async loadWaits(runId: string): Promise<WaitRecord[]> {
    const { s } = this.#open();
    return this.#read("loadWaits", () => s.listWaits.all(runId).map(rowToWait));
  }

  async resolveWait(request: ResolveWaitRequest): Promise<ResolveWaitResult> {
    const { tx } = this.#open();
    // What `decide` throws is its refusal, not a storage failure: it reaches the caller as thrown.
    let refusal: { error: unknown } | undefined;
    const decide: ResolveWaitRequest["decide"] = (wait, run) => {
      try {
        return request.decide(wait, run);
      } catch (error) {
        refusal = { error };
        throw error;
      }
    };
    try {
      return this.#write(true, "resolveWait", () => tx.resolveWait.immediate({ ...request, decide }));
    } catch (error) {
      throw refusal ? refusal.error : error;
    }
  }

  async deliverSignal(request: SignalRequest): Promise<SignalResult> {
    const { tx } = this.#open();
    return this.#write(true, "deliverSignal", () => tx.deliverSignal.immediate(request));
  }

  async listSignals(runId: string): Promise<SignalRecord[]> {
    const { s } = this.#open();
    return this.#read("listSignals", () => s.listSignals.all(runId).map(rowToSignal));
  }

  async fireDueWaits(now: number, limit: number): Promise<WaitRecord[]> {
    const { tx } = this.#open();
    return this.#write(true, "fireDueWaits", () => tx.fireDueWaits.immediate(now, limit));
  }

  /**
   * A read finds the runs to sweep (none, nearly always) without taking the write lock; only when
   * there are some does a write transaction read them again and resolve their waits.
   */
  async resolveEndedChildWaits(now: number, limit: number): Promise<WaitRecord[]> {
    const { s, tx } = this.#open();
    const runIds = this.#read("resolveEndedChildWaits", () => s.endedChildWaitRuns.all(limit));
    if (runIds.length === 0) return [];
    return this.#write(true, "resolveEndedChildWaits", () => tx.sweepChildWaits.immediate(runIds, now));
  }

  async nextDueAt(): Promise<number | null> {
    const { s } = this.#open();
    return this.#read("nextDueAt", () => s.nextDueAt.get() ?? null);
  }

  async requestStop(request: StopRunRequest): Promise<{ run: RunRecord; transitions: TransitionRecord[] }> {
    const { tx } = this.#open();
    return this.#write(true, "requestStop", () => tx.requestStop.immediate(request));
  }

  async recordAcceptance(runId: string, acceptance: AcceptanceRecord): Promise<RunRecord> {
    const { tx } = this.#open();
    return this.#write(true, "recordAcceptance", () => tx.recordAcceptance.immediate(runId, acceptance));
  }

  async listStopRequested(workerId: string): Promise<string[]> {
    const { s } = this.#open();
    return this.#read("listStopRequested", () => s.listStopRequested.all(workerId));
  }

  #open(): { db: Db; s: Statements; tx: Transactions } {
    if (!this.#db || !this.#s || !this.#tx) {
      throw new StorageError(`SqliteBackend for "${this.path}" is not open; call init() first (and not after close())`);
    }
    return { db: this.#db, s: this.#s, tx: this.#tx };
  }

  /**
   * Runs a write at the durability it needs. `synchronous` cannot change inside a transaction,
   * so it is set before; in WAL mode a FULL commit also makes every NORMAL commit before it
   * durable, since it fsyncs the log they were appended to.
   */
  #write<T>(sync: boolean, operation: string, write: () => T): T {
    const level = sync && this.durability === "machine" ? "FULL" : "NORMAL";
    try {
      if (level !== this.#sync) {
        // Not a prepared statement: SQLite applies `PRAGMA synchronous = x` when the statement is
        // compiled, so re-running a prepared one changes nothing. exec compiles it each time (~1 µs).
        (this.#db as Db).exec(`PRAGMA synchronous = ${level}`);
        this.#sync = level;
      }
      return write();
    } catch (error) {
      throw toStorageError(error, this.path, operation);
    }
  }

  #read<T>(operation: string, read: () => T): T {
    try {
      return read();
    } catch (error) {
      throw toStorageError(error, this.path, operation);
    }
  }
}
