import type { SignalRecord } from "../../core/records.ts";
import type { SignalRequest, SignalResult } from "../contract/signal-store.ts";
import { rowToSignal, type SignalRow } from "../rows/signal-rows.ts";
import { rowToWait, type WaitRow } from "../rows/wait-rows.ts";
import { planSignal, signalTarget } from "../rules/signal-rules.ts";
import {
  applyPlan,
  byId,
  lockRun,
  type PlanContext,
  type PostgresShared,
  planContext,
  planned,
} from "./postgres-plans.ts";

/** `deliverSignal`: the run locked, the inbox entry with the same message id, the open signal waits of the name. */
export async function deliverSignalIn(ctx: PlanContext, request: SignalRequest): Promise<SignalResult> {
  const run = await lockRun(ctx, request.runId);
  const [existing] = run ? await ctx.query<SignalRow>(ctx.statements.getSignal, [run.id, request.messageId]) : [];
  const openWaits =
    run && !existing
      ? (await ctx.query<WaitRow>(ctx.statements.openSignalWaits, [run.id, request.name])).map(rowToWait)
      : [];
  const counted = run && !existing && request.maxUnread !== undefined && !signalTarget(openWaits, request);
  const [count] = counted ? await ctx.query<{ unread: number }>(ctx.statements.countUnreadSignals, [run.id]) : [];
  const { plan, ...result } = planned(() =>
    planSignal({ run, request, existing: existing && rowToSignal(existing), openWaits, unread: count?.unread }),
  );
  await applyPlan(ctx, plan, byId(run ? [run] : []));
  return structuredClone(result);
}

/** The signals of `PostgresBackend` (`SignalStore`): a run's inbox. */
export class PostgresSignals {
  readonly #x: PostgresShared;

  constructor(shared: PostgresShared) {
    this.#x = shared;
  }

  async deliverSignal(request: SignalRequest): Promise<SignalResult> {
    const { db } = this.#x;
    const pool = db.ready();
    return db.transaction(pool, "deliverSignal", (client) => deliverSignalIn(planContext(this.#x, client), request));
  }

  async listSignals(runId: string): Promise<SignalRecord[]> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    return db.call("listSignals", async () =>
      (await db.query<SignalRow>(pool, statements.listSignals, [runId])).map(rowToSignal),
    );
  }
}
