import { InvalidInputError } from "../../core/errors.ts";
import type { ForkRunRequest, ForkRunResult } from "../contract/fork-store.ts";
import { runValues } from "../rows/run-rows.ts";
import { transitionParams } from "../rows/transition-rows.ts";
import { planFork } from "../rules/fork-rules.ts";
import { journalWrite } from "./postgres-journal-entries.ts";
import { wakePayload } from "./postgres-listener.ts";
import { lockRun, type PostgresShared, planContext } from "./postgres-plans.ts";

/**
 * The forks of `PostgresBackend` (`ForkStore`): one transaction locks the source, writes the fork
 * and its first transition (the `createRun` statement, whose wake-up goes out at commit), then
 * its journal (one entry at epoch 0) and the source's `forks`.
 */
export class PostgresForks {
  readonly #x: PostgresShared;

  constructor(shared: PostgresShared) {
    this.#x = shared;
  }

  async forkRun(request: ForkRunRequest): Promise<ForkRunResult> {
    const { db, statements, channel, inlineLimitBytes } = this.#x;
    const pool = db.ready();
    return db.transaction(pool, "forkRun", async (client) => {
      const ctx = planContext(this.#x, client);
      const planned = planFork(await lockRun(ctx, request.forkedFrom.runId), request);
      const { run, transition, steps, source } = planned;
      const written = await ctx.query(statements.createRun, [
        ...runValues(run),
        ...transitionParams(transition).slice(1),
        channel,
        wakePayload({ kind: "runnable", runId: run.id }),
      ]);
      if (written.length !== 1) {
        throw new InvalidInputError(
          `run id "${run.id}" already exists in schema "${this.#x.schema}"; run ids must be unique`,
        );
      }
      const { entries, blobs } = journalWrite([{ epoch: 0, steps }], inlineLimitBytes);
      await ctx.query(statements.forkJournal, [
        run.id,
        JSON.stringify(entries[0]?.steps ?? []),
        ...blobs,
        source.id,
        JSON.stringify(source.forks),
      ]);
      return { run, transition, source };
    });
  }
}
