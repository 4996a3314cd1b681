import type Database from "better-sqlite3";
import type { RunRecord, TransitionRecord } from "../../core/records.ts";
import type { StopRunRequest } from "../contract/stop-store.ts";
import { planStop } from "../rules/stop-rules.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";
import { applyPlan, getRun } from "./sqlite-plans.ts";
import type { Statements } from "./sqlite-statements.ts";

type Tx<F extends (...args: never[]) => unknown> = Database.Transaction<F>;

/** The stops of `SqliteBackend` (`StopStore`): stop requests and the runs a worker must stop. */
export class SqliteStops {
  readonly #c: SqliteConnection;
  readonly #s: Statements;
  readonly #requestStop: Tx<(request: StopRunRequest) => { run: RunRecord; transitions: TransitionRecord[] }>;

  constructor(connection: SqliteConnection, s: Statements) {
    this.#c = connection;
    this.#s = s;
    const file = connection;
    this.#requestStop = connection.db.transaction((request: StopRunRequest) => {
      const run = getRun(s, request.runId);
      const plan = planStop({ run, request });
      applyPlan(s, plan, file);
      return { run: plan.current(run as RunRecord), transitions: plan.transitions };
    });
  }

  requestStop(request: StopRunRequest): { run: RunRecord; transitions: TransitionRecord[] } {
    return this.#c.write(true, "requestStop", () => this.#requestStop.immediate(request));
  }

  listStopRequested(workerId: string): string[] {
    return this.#c.read("listStopRequested", () => this.#s.listStopRequested.all(workerId));
  }
}
