import type Database from "better-sqlite3";
import type { AcceptanceRecord, RunRecord } from "../../core/records.ts";
import type { PausedReason, RunState } from "../../core/run-state.ts";
import type { CreateRunInput, CreateRunResult, RunCounts, RunFilter } from "../contract/run-store.ts";
import { type RunRow, rowToRun, runValues } from "../rows/run-rows.ts";
import { transitionParams } from "../rows/transition-rows.ts";
import { RUNNABLE_STATES } from "../rules/lease-rules.ts";
import { applyAcceptance, pendingRun } from "../rules/run-rules.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";
import { getRun, insertNewRun } from "./sqlite-plans.ts";
import type { Statements, Stmt } from "./sqlite-statements.ts";

type Tx<F extends (...args: never[]) => unknown> = Database.Transaction<F>;

/** The runs of `SqliteBackend` (`RunStore`): creating, reading and listing runs, and acceptance. */
export class SqliteRuns {
  readonly #c: SqliteConnection;
  readonly #s: Statements;
  readonly #create: Tx<(input: CreateRunInput) => CreateRunResult>;
  readonly #accept: Tx<(runId: string, acceptance: AcceptanceRecord) => RunRecord>;
  /** `listRuns` statements by their SQL, prepared on first use. */
  readonly #listRuns = new Map<string, Stmt<[Record<string, unknown>], RunRow>>();
  #countRuns:
    | Stmt<[number], { state: RunState; paused_reason: PausedReason | null; n: number; backlog: number }>
    | undefined;

  constructor(connection: SqliteConnection, s: Statements) {
    this.#c = connection;
    this.#s = s;
    const file = connection;
    this.#create = connection.db.transaction((input: CreateRunInput): CreateRunResult => {
      if (input.key !== null) {
        const row = s.getRunByKey.get(input.agent, input.workflow, input.key);
        if (row) return { run: rowToRun(row), created: false };
      }
      const { run, transition: first } = pendingRun(input);
      insertNewRun(s, run, file);
      s.insertTransition.run(...transitionParams(first));
      return { run, created: true, transition: first };
    });
    this.#accept = connection.db.transaction((runId: string, acceptance: AcceptanceRecord): RunRecord => {
      const run = applyAcceptance(getRun(s, runId), runId, acceptance);
      s.updateRun.run(...runValues(run).slice(1), run.id);
      return run;
    });
  }

  /** In the next group commit (`SqliteConnection.group`), with the other writes of its turn. */
  createRun(input: CreateRunInput): Promise<CreateRunResult> {
    return this.#c.group(true, "createRun", () => this.#create.immediate(input));
  }

  getRun(runId: string): RunRecord | undefined {
    return this.#c.read("getRun", () => getRun(this.#s, runId));
  }

  listRuns(filter: RunFilter): RunRecord[] {
    return this.#c.read("listRuns", () => {
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
        stmt = this.#c.db.prepare<[Record<string, unknown>], RunRow>(sql);
        this.#listRuns.set(sql, stmt);
      }
      return stmt.all(params).map(rowToRun);
    });
  }

  /** See `RunStore.countRuns`: one grouped scan, the backlog counted with `isClaimable`'s rule. */
  countRuns(now: number): RunCounts {
    return this.#c.read("countRuns", () => {
      this.#countRuns ??= this.#c.db.prepare<
        [number],
        { state: RunState; paused_reason: PausedReason | null; n: number; backlog: number }
      >(
        `SELECT state, paused_reason, count(*) AS n,
           sum(CASE WHEN state IN (${[...RUNNABLE_STATES].map((state) => `'${state}'`).join(", ")})
             AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= ?) THEN 1 ELSE 0 END) AS backlog
         FROM runs GROUP BY state, paused_reason`,
      );
      const rows = this.#countRuns.all(now);
      return {
        states: rows.map((r) => ({ state: r.state, pausedReason: r.paused_reason, count: r.n })),
        backlog: rows.reduce((sum, r) => sum + r.backlog, 0),
      };
    });
  }

  recordAcceptance(runId: string, acceptance: AcceptanceRecord): RunRecord {
    return this.#c.write(true, "recordAcceptance", () => this.#accept.immediate(runId, acceptance));
  }
}
