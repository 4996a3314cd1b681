import type Database from "better-sqlite3";
import type { ForkRunRequest, ForkRunResult } from "../contract/fork-store.ts";
import { runValues } from "../rows/run-rows.ts";
import { encodeStep } from "../rows/step-rows.ts";
import { transitionParams } from "../rows/transition-rows.ts";
import { planFork } from "../rules/fork-rules.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";
import { saveStepFenced } from "./sqlite-journal.ts";
import { getRun, insertNewRun } from "./sqlite-plans.ts";
import type { Statements } from "./sqlite-statements.ts";

type Tx<F extends (...args: never[]) => unknown> = Database.Transaction<F>;

/** The forks of `SqliteBackend` (`ForkStore`): a run made from another's journal, in one transaction. */
export class SqliteForks {
  readonly #c: SqliteConnection;
  readonly #fork: Tx<(request: ForkRunRequest) => ForkRunResult>;

  constructor(connection: SqliteConnection, s: Statements, inlineLimitBytes: number) {
    this.#c = connection;
    const file = connection;
    this.#fork = connection.db.transaction((request: ForkRunRequest): ForkRunResult => {
      const planned = planFork(getRun(s, request.forkedFrom.runId), request);
      insertNewRun(s, planned.run, file);
      s.insertTransition.run(...transitionParams(planned.transition));
      // The new run is at epoch 0, as its copied steps are: the fence lets them in.
      for (const step of planned.steps) saveStepFenced(s, step, encodeStep(step, inlineLimitBytes), 0);
      s.updateRun.run(...runValues(planned.source).slice(1), planned.source.id);
      return { run: planned.run, transition: planned.transition, source: planned.source };
    });
  }

  forkRun(request: ForkRunRequest): ForkRunResult {
    return this.#c.write(true, "forkRun", () => this.#fork.immediate(request));
  }
}
