import type Database from "better-sqlite3";
import type { ImportRunInput, ImportRunResult } from "../contract/import-store.ts";
import { encodeStep } from "../rows/step-rows.ts";
import { planImport } from "../rules/import-rules.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";
import { saveStepFenced } from "./sqlite-journal.ts";
import { applyPlan, getRun } from "./sqlite-plans.ts";
import type { Statements } from "./sqlite-statements.ts";

type Tx<F extends (...args: never[]) => unknown> = Database.Transaction<F>;

/** The imports of `SqliteBackend` (`ImportStore`): a whole run in one immediate transaction. */
export class SqliteImports {
  readonly #c: SqliteConnection;
  readonly #import: Tx<(input: ImportRunInput) => ImportRunResult>;

  /** `inlineLimitBytes` is the backend's (imported steps go out of line like any). */
  constructor(connection: SqliteConnection, s: Statements, inlineLimitBytes: number) {
    this.#c = connection;
    const file = connection;
    this.#import = connection.db.transaction((input: ImportRunInput): ImportRunResult => {
      const { run } = input;
      const keyRow = run.key === null ? undefined : s.getRunByKey.get(run.agent, run.workflow, run.key);
      const byKey = keyRow && getRun(s, keyRow.id);
      const planned = planImport(input, getRun(s, run.id), byKey);
      if ("existing" in planned) return planned.existing;
      applyPlan(s, planned.plan, file);
      for (const step of planned.steps) saveStepFenced(s, step, encodeStep(step, inlineLimitBytes), planned.run.epoch);
      return { run: planned.run, created: true };
    });
  }

  importRun(input: ImportRunInput): ImportRunResult {
    return this.#c.write(true, "importRun", () => this.#import.immediate(input));
  }
}
