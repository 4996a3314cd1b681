import type { RunRecord, TransitionRecord } from "../../core/records.ts";
import type { StopRunRequest } from "../contract/stop-store.ts";
import { planStop } from "../rules/stop-rules.ts";
import {
  applyPlan,
  byId,
  lockRun,
  type PlanContext,
  type PostgresShared,
  planContext,
  planned,
} from "./postgres-plans.ts";

/**
 * `requestStop`: the run locked, and only the run: a stop changes that run alone (the one it ends
 * at once, a top-level PENDING run, has no waits, no parent and no children).
 */
export async function requestStopIn(
  ctx: PlanContext,
  request: StopRunRequest,
): Promise<{ run: RunRecord; transitions: TransitionRecord[] }> {
  const run = await lockRun(ctx, request.runId);
  const plan = planned(() => planStop({ run, request }));
  await applyPlan(ctx, plan, byId(run ? [run] : []));
  return { run: plan.current(run as RunRecord), transitions: plan.transitions };
}

/** The stops of `PostgresBackend` (`StopStore`): stop requests and the runs a worker must stop. */
export class PostgresStops {
  readonly #x: PostgresShared;

  constructor(shared: PostgresShared) {
    this.#x = shared;
  }

  async requestStop(request: StopRunRequest): Promise<{ run: RunRecord; transitions: TransitionRecord[] }> {
    const { db } = this.#x;
    const pool = db.ready();
    return db.transaction(pool, "requestStop", (client) => requestStopIn(planContext(this.#x, client), request));
  }

  /**
   * Oldest first. Only runs that have not ended are considered (a worker releases the lease of a
   * run it ends), which keeps the lookup on a small partial index.
   */
  async listStopRequested(workerId: string): Promise<string[]> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    return db.call("listStopRequested", async () =>
      (await db.query<{ id: string }>(pool, statements.listStopRequested, [workerId])).map((r) => r.id),
    );
  }
}
