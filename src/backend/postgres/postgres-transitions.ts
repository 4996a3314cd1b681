import { InvalidInputError, StorageError } from "../../core/errors.ts";
import type { RunRecord, TransitionRecord, WaitRecord } from "../../core/records.ts";
import type { TransitionRequest } from "../contract/transition-store.ts";
import { type RunRow, rowToRun } from "../rows/run-rows.ts";
import { rowToTransition, type TransitionRow } from "../rows/transition-rows.ts";
import { rowToWait, type WaitRow } from "../rows/wait-rows.ts";
import { type EndContext, planTransition } from "../rules/ending-rules.ts";
import { hasEnded, Plan } from "../rules/plan.ts";
import { CommitBatcher, type Settled } from "./batching/postgres-commit-batcher.ts";
import { movedIn } from "./batching/postgres-move-batch.ts";
import { isConnectionError } from "./postgres-errors.ts";
import {
  applyPlan,
  merge,
  type PlanContext,
  type PostgresShared,
  planContext,
  type RidingSteps,
  type TransitionOutcome,
} from "./postgres-plans.ts";

/**
 * The transitions of `PostgresBackend` (`TransitionStore`), batched ({@link CommitBatcher}):
 * first the moves that need nothing but their run's row, in one statement
 * (`batching/postgres-move-batch.ts`), then the others through the planners, in one transaction
 * ({@link transitionsIn}).
 */
export class PostgresTransitions {
  readonly #x: PostgresShared;
  /** Transitions of all runs, batched into shared transactions. */
  #transitions: CommitBatcher<TransitionRequest, TransitionOutcome> | undefined;

  constructor(shared: PostgresShared) {
    this.#x = shared;
  }

  /**
   * The transition and, into an ended state, what `planEnd` does (waits closed, the parent's child
   * wait resolved, children stopped, a successor created). Transitions of different runs that a
   * process asks for in the same turn of the event loop, or while another batch is being written,
   * are written together ({@link CommitBatcher}):
   *
   * - first those that need nothing but their run's row (fenced by the epoch, no successor, and
   *   for an end no parent, no open wait and no child still running: a worker's fifty runs that
   *   complete) in one statement and one commit (`moveRuns`, `batching/postgres-move-statements.ts`);
   * - then the others, and any the statement left unwritten (a fence that moved meanwhile, say),
   *   through the planners in one transaction (`transitionsIn`, below, for the rows it locks and in
   *   what order). A transaction that fails for a reason other than the
   *   connection (one request's successor clashes with a taken id, say) rolls back and its
   *   requests are tried again one transaction each, so each caller gets the outcome it would have
   *   had alone.
   *
   * The requests of one batch were made concurrently, so either order of their commits is one
   * they could have had; the moved ones commit first.
   */
  async transition(request: TransitionRequest): Promise<TransitionOutcome> {
    this.#x.db.ready();
    this.#transitions ??= new CommitBatcher({
      key: (r: TransitionRequest) => r.runId,
      run: (batch) => this.#transitionBatch(batch),
    });
    return this.#transitions.submit(request);
  }

  async listTransitions(runId: string): Promise<TransitionRecord[]> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    return db.call("listTransitions", async () =>
      (await db.query<TransitionRow>(pool, statements.listTransitions, [runId])).map(rowToTransition),
    );
  }

  async #transitionBatch(batch: readonly TransitionRequest[]): Promise<Settled<TransitionOutcome>[]> {
    const { db } = this.#x;
    const pool = db.ready();
    // First the requests that need nothing but their runs' rows, in one statement (`moveRuns`);
    // then, in a transaction, the others and those the statement left unwritten.
    let moved = new Map<string, TransitionOutcome>();
    try {
      moved = await db.call("transition", () => movedIn(planContext(this.#x, pool), batch));
    } catch (error) {
      // A lost connection leaves the commit unknown: every caller hears of it, as it would alone.
      // Any other failure (one request's value the statement cannot take, say) wrote nothing: the
      // planners take the whole batch, and isolate the request that fails.
      if (isConnectionError((error as { cause?: unknown }).cause ?? error)) throw error;
    }
    const rest = batch.filter((request) => !moved.has(request.runId));
    // A failure of the transaction is the outcome of its requests alone: the moved ones are committed.
    const planned =
      rest.length === 0
        ? []
        : await this.#plannedBatch(rest).catch((error: unknown) =>
            rest.map((): Settled<TransitionOutcome> => ({ ok: false, error })),
          );
    let next = 0;
    return batch.map((request): Settled<TransitionOutcome> => {
      const value = moved.get(request.runId);
      if (value) return { ok: true, value };
      return planned[next++] ?? { ok: false, error: new StorageError("transition: the batch gave no outcome") };
    });
  }

  /** Transitions through the planners, in one transaction ({@link transitionsIn}). */
  async #plannedBatch(batch: readonly TransitionRequest[]): Promise<Settled<TransitionOutcome>[]> {
    const { db } = this.#x;
    const pool = db.ready();
    const inTransaction = (requests: readonly TransitionRequest[]) =>
      db.transaction(pool, "transition", (client) => transitionsIn(planContext(this.#x, client), requests));
    try {
      return await inTransaction(batch);
    } catch (error) {
      // A lost connection leaves the commit unknown: every caller hears of it, as it would alone.
      if (batch.length === 1 || isConnectionError((error as { cause?: unknown }).cause ?? error)) throw error;
      return Promise.all(
        batch.map((request) =>
          inTransaction([request]).then(
            ([outcome]): Settled<TransitionOutcome> =>
              outcome ?? { ok: false, error: new StorageError("transition: the batch gave no outcome") },
            (alone: unknown): Settled<TransitionOutcome> => ({ ok: false, error: alone }),
          ),
        ),
      );
    }
  }
}

/** How many times {@link lockTransitioning} runs its statement before it gives up on a short count. */
const LOCK_ATTEMPTS = 3;

/**
 * Locks, in id order, the runs `ids` and, for those of them in `ending`, their parents and their
 * children that have not ended (the `lockTransitioning` statement, which locks by primary key), and
 * checks that every run the statement chose came back locked. A short count (a run removed while
 * the statement waited: nothing removes runs) runs the statement again, with what is committed
 * by then; the rows locked already stay locked. Returns the runs as they are once locked.
 */
export async function lockTransitioning(
  ctx: PlanContext,
  ids: readonly string[],
  ending: readonly string[],
): Promise<RunRecord[]> {
  let last = { wanted: 0, locked: 0 };
  for (let attempt = 1; attempt <= LOCK_ATTEMPTS; attempt++) {
    const rows = await ctx.query<RunRow & { wanted: number }>(ctx.statements.lockTransitioning, [ids, ending]);
    const wanted = rows[0]?.wanted ?? 0;
    if (rows.length === wanted) return rows.map(rowToRun);
    last = { wanted, locked: rows.length };
  }
  throw new StorageError(
    `locking runs ${ids.join(", ")} for a transition: ${last.locked} of the ${last.wanted} runs chosen came back locked, ${LOCK_ATTEMPTS} times; nothing was written, try again`,
  );
}

/**
 * Transitions of several runs (one request per run) in the current transaction, as one batch:
 *
 * 1. One statement locks, by primary key and in id order (the lock order of `postgres-plans.ts`),
 *    every run a request names and, for the requests into an ended state, their parents and their
 *    children that have not ended ({@link lockTransitioning}, which checks that each came back).
 * 2. One statement reads the open waits of the ending runs and their parents' child waits on them.
 * 3. The requests are planned one after another, in the batch's order, each against the rows as
 *    the requests before it left them: a parent two of whose children end in one batch is seen by
 *    the second as the first child's end left it, exactly as two transactions in turn would see it.
 *    A request its planner refuses (a fence that moved, a state that does not allow the move)
 *    fails alone, with the planner's error, and writes nothing.
 * 4. The plans of the others are written as one (`applyPlan`), with the steps that ride with their
 *    transitions, in one statement.
 *
 * Any other failure (a statement that fails) throws, and the caller's transaction rolls back.
 */
export async function transitionsIn(
  ctx: PlanContext,
  requests: readonly TransitionRequest[],
): Promise<Settled<TransitionOutcome>[]> {
  const ids = requests.map((r) => r.runId);
  if (new Set(ids).size !== ids.length) throw new RangeError("a batch of transitions names a run twice");
  const ending = requests.filter((r) => hasEnded(r.to)).map((r) => r.runId);
  const rows = await lockTransitioning(ctx, ids, ending);
  const waits: WaitRecord[] = [];
  if (ending.length > 0) {
    const view = new Map(rows.map((run) => [run.id, run]));
    const parents = ending.map((id) => view.get(id)?.parentRunId ?? null);
    for (const row of await ctx.query<WaitRow>(ctx.statements.loadEndWaitsOf, [ending, parents])) {
      waits.push(rowToWait(row));
    }
  }
  return applyTransitions(ctx, requests, rows, waits);
}

/**
 * Steps 3 and 4 of {@link transitionsIn}: plans `requests` against `rows` (every run they name,
 * and for those into an ended state their parents and open children, all locked by this
 * transaction) and `waits` (the ending runs' open waits and their parents' child waits on them),
 * and writes the plans that pass as one.
 */
async function applyTransitions(
  ctx: PlanContext,
  requests: readonly TransitionRequest[],
  rows: readonly RunRecord[],
  loadedWaits: readonly WaitRecord[],
): Promise<Settled<TransitionOutcome>[]> {
  const view = new Map(rows.map((run) => [run.id, run]));
  const waits = new Map(loadedWaits.map((wait) => [waitKey(wait), wait]));
  const plan = new Plan();
  /** The steps that ride with the transitions planned, under the epochs those transitions leave. */
  const writes: RidingSteps[] = [];
  const outcomes = requests.map((request): Settled<TransitionOutcome> => {
    try {
      const steps = request.steps ?? [];
      if (steps.some((step) => step.runId !== request.runId)) {
        throw new InvalidInputError("a transition's steps must be steps of its run");
      }
      const run = view.get(request.runId);
      const end = run && hasEnded(request.to) ? endContext(run, view, waits) : undefined;
      const { plan: own, ...outcome } = planTransition(end ? { run, request, end } : { run, request });
      merge(plan, own);
      for (const changed of own.runs.values()) view.set(changed.id, changed);
      for (const created of own.created) view.set(created.id, created);
      for (const wait of own.waits) waits.set(waitKey(wait), wait);
      if (steps.length > 0) writes.push({ epoch: outcome.run.epoch, steps });
      return { ok: true, value: outcome };
    } catch (error) {
      return { ok: false, error };
    }
  });
  // The steps in the same statement, under the transitions' fences (checked by the planners, the
  // rows locked); committed with the transaction, at its commit level.
  await applyPlan(ctx, plan, new Map(rows.map((run) => [run.id, run])), writes);
  return outcomes;
}

/**
 * What `planEnd` needs for `run`, from the batch's rows as the requests before it left them: its
 * open waits, its parent and the parent's open child wait on it, its children that have not ended.
 */
function endContext(run: RunRecord, view: ReadonlyMap<string, RunRecord>, waits: ReadonlyMap<string, WaitRecord>) {
  const parent = run.parentRunId === null ? undefined : view.get(run.parentRunId);
  const open = [...waits.values()].filter((w) => w.status === "open");
  const end: EndContext = {
    openWaits: open.filter((w) => w.runId === run.id).sort(bySeq),
    parent,
    parentWait: parent && open.find((w) => w.runId === parent.id && w.kind === "child" && w.name === run.id),
    children: [...view.values()]
      .filter((r) => r.parentRunId === run.id && !hasEnded(r.state))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
  };
  return end;
}

function waitKey(wait: WaitRecord): string {
  return `${wait.runId}\u0000${wait.id}`;
}

/** The order `loadEndWaitsOf` returns waits in. */
function bySeq(a: WaitRecord, b: WaitRecord): number {
  return a.seq - b.seq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
