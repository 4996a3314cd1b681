import type { ImportRunInput, ImportRunResult } from "../contract/import-store.ts";
import { type RunRow, rowToRun } from "../rows/run-rows.ts";
import { planImport } from "../rules/import-rules.ts";
import { applyPlan, lockRun, type PostgresShared, planContext, planned } from "./postgres-plans.ts";

/**
 * The imports of `PostgresBackend` (`ImportStore`): one transaction reads the run its id names
 * (locked, if there is one) and the run its key names, plans the import and writes the run, its
 * transitions, waits, signals and wake-up, and its steps as one journal entry under the run's
 * epoch (`applyPlan`). Two imports of one run at once: the second fails on the taken id, and the
 * caller reads the run the first wrote.
 */
export class PostgresImports {
  readonly #x: PostgresShared;

  constructor(shared: PostgresShared) {
    this.#x = shared;
  }

  async importRun(input: ImportRunInput): Promise<ImportRunResult> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    const { run } = input;
    return db.transaction(pool, "importRun", async (client) => {
      const ctx = planContext(this.#x, client);
      const existing = await lockRun(ctx, run.id);
      const [keyRow] =
        run.key === null ? [] : await ctx.query<RunRow>(statements.getRunByKey, [run.agent, run.workflow, run.key]);
      const result = planned(() => planImport(input, existing, keyRow && rowToRun(keyRow)));
      if ("existing" in result) return result.existing;
      await applyPlan(ctx, result.plan, new Map(), [{ epoch: result.run.epoch, steps: result.steps }]);
      return { run: result.run, created: true };
    });
  }
}
