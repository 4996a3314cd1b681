import { InvalidInputError, StorageError } from "../../core/errors.ts";
import type { AcceptanceRecord, RunRecord } from "../../core/records.ts";
import type { PausedReason, RunState } from "../../core/run-state.ts";
import type { CreateRunInput, CreateRunResult, RunCounts, RunFilter } from "../contract/run-store.ts";
import { RUN_COLUMNS, type RunRow, rowToRun, runValues } from "../rows/run-rows.ts";
import { TRANSITION_VALUE_COLUMNS, transitionParams } from "../rows/transition-rows.ts";
import { applyAcceptance, pendingRun } from "../rules/run-rules.ts";
import { CommitBatcher, type Settled, settle } from "./batching/postgres-commit-batcher.ts";
import { claimable } from "./postgres-lease-statements.ts";
import { wakePayload } from "./postgres-listener.ts";
import type { PostgresShared } from "./postgres-plans.ts";
import { recordsetJson } from "./postgres-recordset.ts";
import { quoteIdent, type Sql, sql } from "./postgres-sql.ts";

/** The runs of `PostgresBackend` (`RunStore`): creating, reading and listing runs, and acceptance. */
export class PostgresRuns {
  readonly #x: PostgresShared;
  /** Runs created at once, written by one statement. */
  #creates: CommitBatcher<CreateRunInput, CreateRunResult> | undefined;
  /** `getRun` calls made at once, read by one statement. */
  #reads: CommitBatcher<string, RunRecord | undefined> | undefined;
  /** `listRuns` statements by their WHERE clause. */
  readonly #listRuns = new Map<string, Sql>();
  #countRuns: Sql | undefined;

  constructor(shared: PostgresShared) {
    this.#x = shared;
  }

  /**
   * Runs created at once by one process share a statement and a commit ({@link CommitBatcher}):
   * an application that starts fifty runs writes them together. A run the batch could not write
   * (its key names a run already, or its id is taken) is tried again alone, which says which.
   */
  async createRun(input: CreateRunInput): Promise<CreateRunResult> {
    this.#x.db.ready();
    this.#creates ??= new CommitBatcher({
      key: (i: CreateRunInput) =>
        i.key === null ? `id\u0000${i.id}` : `key\u0000${i.agent}\u0000${i.workflow}\u0000${i.key}`,
      run: (batch) => this.#createBatch(batch),
    });
    return this.#creates.submit(input);
  }

  async #createBatch(batch: readonly CreateRunInput[]): Promise<Settled<CreateRunResult>[]> {
    if (batch.length === 1) return [await settle(this.#createOne(batch[0] as CreateRunInput))];
    const { db, statements, channel } = this.#x;
    const pool = db.ready();
    const pending = batch.map((input) => pendingRun(input));
    const written = await db.call("createRun", () =>
      db.query<{ run_id: string }>(pool, statements.createRuns, [
        recordsetJson(
          pending.map((p) => runValues(p.run)),
          RUN_COLUMNS,
        ),
        recordsetJson(
          pending.map((p) => [...transitionParams(p.transition), wakePayload({ kind: "runnable", runId: p.run.id })]),
          [...TRANSITION_VALUE_COLUMNS, "wake"],
        ),
        channel,
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
    const { db, statements, channel } = this.#x;
    const pool = db.ready();
    const { run, transition } = pendingRun(input);
    return db.call("createRun", async () => {
      const written = await db.query(pool, statements.createRun, [
        ...runValues(run),
        ...transitionParams(transition).slice(1),
        channel,
        wakePayload({ kind: "runnable", runId: run.id }),
      ]);
      if (written.length === 1) return { run, created: true, transition };
      // Nothing written: the key names a run already, or the id is taken.
      if (input.key !== null) {
        const [row] = await db.query<RunRow>(pool, statements.getRunByKey, [input.agent, input.workflow, input.key]);
        if (row) return { run: rowToRun(row), created: false };
      }
      throw new InvalidInputError(
        `run id "${input.id}" already exists in schema "${this.#x.schema}"; run ids must be unique`,
      );
    });
  }

  /** Reads made at once share a statement ({@link CommitBatcher}), as the waiters of fifty runs do. */
  async getRun(runId: string): Promise<RunRecord | undefined> {
    this.#x.db.ready();
    this.#reads ??= new CommitBatcher({ run: (ids: readonly string[]) => this.#readBatch(ids) });
    return this.#reads.submit(runId);
  }

  async #readBatch(ids: readonly string[]): Promise<Settled<RunRecord | undefined>[]> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    const rows =
      ids.length === 1
        ? await db.call("getRun", () => db.query<RunRow>(pool, statements.getRun, [ids[0]]))
        : await db.call("getRun", () => db.query<RunRow>(pool, statements.getRuns, [ids]));
    const byId = new Map(rows.map((row) => [row.id, row]));
    return ids.map((id) => {
      const row = byId.get(id);
      return { ok: true, value: row && rowToRun(row) };
    });
  }

  /** See `RunStore.countRuns`: one grouped scan, the backlog counted with the claim's own predicate. */
  async countRuns(now: number): Promise<RunCounts> {
    const { db, schema } = this.#x;
    const pool = db.ready();
    this.#countRuns ??= sql(
      `SELECT state, paused_reason, count(*)::int AS n, (count(*) FILTER (WHERE ${claimable("r")}))::int AS backlog
         FROM ${quoteIdent(schema)}.runs r GROUP BY state, paused_reason`,
    );
    const statement = this.#countRuns;
    const rows = await db.call("countRuns", () =>
      db.query<{ state: RunState; paused_reason: PausedReason | null; n: number; backlog: number }>(pool, statement, [
        now,
        null,
      ]),
    );
    return {
      states: rows.map((r) => ({ state: r.state, pausedReason: r.paused_reason, count: r.n })),
      backlog: rows.reduce((sum, r) => sum + r.backlog, 0),
    };
  }

  async listRuns(filter: RunFilter): Promise<RunRecord[]> {
    const { db, statements } = this.#x;
    const pool = db.ready();
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
      statement = statements.listRuns(key, values.length + 1);
      this.#listRuns.set(key, statement);
    }
    values.push(filter.limit ?? 100, filter.offset ?? 0);
    const sql = statement;
    return db.call("listRuns", async () => (await db.query<RunRow>(pool, sql, values)).map(rowToRun));
  }

  /**
   * One statement when the verdict is taken (the run COMPLETED and without one); otherwise the run
   * is read again to word the refusal (`applyAcceptance`).
   */
  async recordAcceptance(runId: string, acceptance: AcceptanceRecord): Promise<RunRecord> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    return db.call("recordAcceptance", async () => {
      const [row] = await db.query<RunRow>(pool, statements.acceptRun, [runId, JSON.stringify(acceptance)]);
      if (row) return rowToRun(row);
      const [current] = await db.query<RunRow>(pool, statements.getRun, [runId]);
      applyAcceptance(current && rowToRun(current), runId, acceptance);
      // Unreachable while the statement and the rule agree: a refusal is thrown above.
      throw new StorageError(`run ${runId}: the acceptance was not stored, and nothing refuses it; try again`);
    });
  }
}
