import { LeaseLostError } from "../../core/errors.ts";
import type { WaitRecord } from "../../core/records.ts";
import type { ResolveWaitRequest, ResolveWaitResult, SuspendRequest, SuspendResult } from "../contract/wait-store.ts";
import { type RunRow, rowToRun } from "../rows/run-rows.ts";
import { rowToSignal, type SignalRow } from "../rows/signal-rows.ts";
import { rowToWait, type WaitRow } from "../rows/wait-rows.ts";
import { planChildSweep } from "../rules/child-sweep-rules.ts";
import { Plan } from "../rules/plan.ts";
import { planDue, planResolveWait, planSuspend } from "../rules/wait-rules.ts";
import {
  applyPlan,
  byId,
  lockRun,
  merge,
  type PlanContext,
  type PostgresShared,
  planContext,
  planned,
} from "./postgres-plans.ts";

/**
 * The waits of `PostgresBackend` that go through the planners, each in the caller's transaction
 * (see `postgres-plans.ts` for the lock order): suspend, resolveWait, fireDueWaits and the sweep
 * of child waits.
 */

/**
 * `suspend`: the run locked, its waits, and — for the waits it is blocked on — the unconsumed
 * signals (only when one of them is a signal wait) and the child runs they name. `planSuspend`
 * consults the inbox and the children only for those waits, so this is all it can use.
 */
export async function suspendIn(ctx: PlanContext, request: SuspendRequest): Promise<SuspendResult> {
  const run = await lockRun(ctx, request.runId);
  if (!run) throw new LeaseLostError(`run ${request.runId} does not exist`);
  const stored = (await ctx.query<WaitRow>(ctx.statements.loadWaits, [run.id])).map(rowToWait);
  const waits = new Map(stored.map((w) => [w.id, w]));
  for (const wait of request.waits) if (!waits.has(wait.id)) waits.set(wait.id, wait);
  const blocked = request.blockedOn
    .map((id) => waits.get(id))
    .filter((w): w is WaitRecord => w !== undefined && w.status === "open");
  const inbox = blocked.some((w) => w.kind === "signal")
    ? (await ctx.query<SignalRow>(ctx.statements.loadInbox, [run.id])).map(rowToSignal)
    : [];
  const childIds = blocked.filter((w) => w.kind === "child").map((w) => w.name);
  const children =
    childIds.length === 0 ? [] : (await ctx.query<RunRow>(ctx.statements.getRuns, [childIds])).map(rowToRun);
  const { plan, result } = planned(() => planSuspend({ run, request, stored, inbox, children }));
  await applyPlan(ctx, plan, byId([run]));
  return structuredClone(result) as SuspendResult;
}

/** `resolveWait`: the run locked and the wait; `decide` runs inside the transaction. */
export async function resolveWaitIn(ctx: PlanContext, request: ResolveWaitRequest): Promise<ResolveWaitResult> {
  const run = await lockRun(ctx, request.runId);
  const [row] = run ? await ctx.query<WaitRow>(ctx.statements.loadWait, [run.id, request.waitId]) : [];
  const { plan, ...result } = planned(() => planResolveWait({ run, wait: row && rowToWait(row), request }));
  await applyPlan(ctx, plan, byId(run ? [run] : []));
  return structuredClone(result);
}

/**
 * `fireDueWaits`: locks the runs of the earliest due open waits, skipping runs another
 * transaction holds (so two workers never fire the same wait), then reads their due waits again
 * under the locks (the first read may predate a resolution that committed while it ran) and
 * applies `planDue` per run, all in one write.
 */
export async function fireDueIn(ctx: PlanContext, now: number, limit: number): Promise<WaitRecord[]> {
  const runs = byId((await ctx.query<RunRow>(ctx.statements.pickDue, [now, limit])).map(rowToRun));
  if (runs.size === 0) return [];
  const due = (await ctx.query<WaitRow>(ctx.statements.dueWaits, [[...runs.keys()], now, limit])).map(rowToWait);
  const plan = new Plan();
  const resolved: WaitRecord[] = [];
  for (const run of runs.values()) {
    const mine = due.filter((w) => w.runId === run.id);
    if (mine.length === 0) continue;
    const result = planned(() => planDue({ run, due: mine, now, versions: run.versions }));
    merge(plan, result.plan);
    resolved.push(...result.resolved);
  }
  await applyPlan(ctx, plan, runs);
  return resolved;
}

/**
 * The sweep of child waits for `runIds` (found by `endedChildWaitRuns` before the transaction):
 * locks those runs by primary key, skipping any another transaction holds (so the sweep never
 * waits, and a child's end that holds the parent resolves the wait itself; a run skipped is swept
 * next time), reads their open child waits and the children those name under the locks, and applies
 * `planChildSweep` per run, all in one write. A wait resolved meanwhile is no longer read as open,
 * so each wait is resolved once, however many workers sweep at the same time.
 */
export async function sweepChildWaitsIn(
  ctx: PlanContext,
  runIds: readonly string[],
  now: number,
): Promise<WaitRecord[]> {
  const runs = byId((await ctx.query<RunRow>(ctx.statements.lockRunsSkipLocked, [runIds])).map(rowToRun));
  if (runs.size === 0) return [];
  const waits = (await ctx.query<WaitRow>(ctx.statements.openChildWaitsOf, [[...runs.keys()]])).map(rowToWait);
  if (waits.length === 0) return [];
  const children = (await ctx.query<RunRow>(ctx.statements.getRuns, [[...new Set(waits.map((w) => w.name))]])).map(
    rowToRun,
  );
  const plan = new Plan();
  const resolved: WaitRecord[] = [];
  for (const run of runs.values()) {
    const result = planned(() =>
      planChildSweep({ run, waits: waits.filter((w) => w.runId === run.id), children, at: now }),
    );
    merge(plan, result.plan);
    resolved.push(...result.resolved);
  }
  await applyPlan(ctx, plan, runs);
  return resolved;
}

/**
 * The waits of `PostgresBackend` (`WaitStore`, and the sweep of child waits, `ChildWaitSweep`):
 * pausing a run, resolving its waits from outside or when they come due.
 */
export class PostgresWaits {
  readonly #x: PostgresShared;

  constructor(shared: PostgresShared) {
    this.#x = shared;
  }

  async suspend(request: SuspendRequest): Promise<SuspendResult> {
    const { db } = this.#x;
    const pool = db.ready();
    return db.transaction(pool, "suspend", (client) => suspendIn(planContext(this.#x, client), request));
  }

  async loadWaits(runId: string): Promise<WaitRecord[]> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    return db.call("loadWaits", async () =>
      (await db.query<WaitRow>(pool, statements.loadWaits, [runId])).map(rowToWait),
    );
  }

  async resolveWait(request: ResolveWaitRequest): Promise<ResolveWaitResult> {
    const { db } = this.#x;
    const pool = db.ready();
    return db.transaction(pool, "resolveWait", (client) => resolveWaitIn(planContext(this.#x, client), request));
  }

  /** One batch in one transaction; runs another transaction holds are skipped, not waited for. */
  async fireDueWaits(now: number, limit: number): Promise<WaitRecord[]> {
    const { db } = this.#x;
    const pool = db.ready();
    return db.transaction(pool, "fireDueWaits", (client) => fireDueIn(planContext(this.#x, client), now, limit));
  }

  async nextDueAt(): Promise<number | null> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    return db.call("nextDueAt", async () => {
      const [row] = await db.query<{ next: number | null }>(pool, statements.nextDueAt, []);
      return row?.next ?? null;
    });
  }

  /**
   * One read finds the runs to sweep (none, nearly always: a partial index of the open child waits
   * and a lookup of each wait's child and run); only when there are some does a transaction lock
   * them and resolve their waits ({@link sweepChildWaitsIn}).
   */
  async resolveEndedChildWaits(now: number, limit: number): Promise<WaitRecord[]> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    const runIds = await db.call("resolveEndedChildWaits", async () =>
      (await db.query<{ run_id: string }>(pool, statements.endedChildWaitRuns, [Math.max(0, limit)])).map(
        (row) => row.run_id,
      ),
    );
    if (runIds.length === 0) return [];
    return db.transaction(pool, "resolveEndedChildWaits", (client) =>
      sweepChildWaitsIn(planContext(this.#x, client), runIds, now),
    );
  }
}
