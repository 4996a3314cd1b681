import { InvalidInputError } from "../../core/errors.ts";
import type { RunRecord, TransitionRecord, WaitRecord } from "../../core/records.ts";
import { storableText } from "../../core/text.ts";
import { assertTransition } from "../../core/transitions.ts";
import type { TransitionRequest } from "../backend.ts";
import { encode } from "../rows/json-columns.ts";
import { type RunRow, rowToRun } from "../rows/run-rows.ts";
import { rowToWait, type WaitRow } from "../rows/wait-rows.ts";
import { type EndContext, planTransition } from "../rules/ending-rules.ts";
import { hasEnded, Plan } from "../rules/plan.ts";
import { transitionRecord, wakeFor } from "../rules/transition-rules.ts";
import type { Settled } from "./postgres-batcher.ts";
import { wakePayload } from "./postgres-listener.ts";
import { batchStepParams, recordsetJson } from "./postgres-schema.ts";
import { MOVE_COLUMNS } from "./postgres-transition-statements.ts";
import { applyPlan, lockTransitioning, merge, type PlanContext, type RidingSteps } from "./postgres-waits.ts";

/** What `transition` returns. */
export type TransitionOutcome = { run: RunRecord; transition: TransitionRecord };

/**
 * The transitions of a batch that `moveRuns` may write in one statement, as its parameters
 * after the channel ($1, and $3–$6): those fenced by their epoch, without a successor, not the
 * resume of a FAILED run (its rule reads the stored error), that the state machine allows and
 * whose steps are steps of their run. Undefined when no request is one of them; the others, and
 * those the statement then leaves unwritten, go through the planners ({@link transitionsIn}).
 */
export function moveParams(
  requests: readonly TransitionRequest[],
  inlineLimitBytes: number,
): { movable: TransitionRequest[]; params: (channel: string) => unknown[] } | undefined {
  const movable = requests.filter(isMovable);
  if (movable.length === 0) return undefined;
  const rows = movable.map((request) => {
    const patch = request.patch ?? {};
    const wake = wakeFor(request.runId, request.to);
    return [
      request.runId,
      (request.fence as { epoch: number }).epoch,
      request.from,
      request.to,
      request.pausedReason ?? null,
      request.at,
      request.actor.kind,
      request.actor.id,
      storableText(request.reason),
      JSON.stringify(request.versions),
      patch.output !== undefined,
      encode(patch.output),
      patch.error !== undefined,
      encode(patch.error ?? undefined),
      patch.usage !== undefined,
      encode(patch.usage),
      patch.resetRecoveries === true,
      patch.countRecovery === true,
      patch.clearStopRequest === true,
      patch.releaseLease === true,
      hasEnded(request.to),
      wake ? wakePayload(wake) : null,
    ];
  });
  const steps = batchStepParams(
    movable
      .filter((r) => r.steps?.length)
      .map((r) => ({ epoch: (r.fence as { epoch: number }).epoch, steps: r.steps ?? [] })),
    inlineLimitBytes,
  );
  const recordset = recordsetJson(
    rows,
    MOVE_COLUMNS.map(([name]) => name),
  );
  return { movable, params: (channel) => [recordset, channel, ...steps] };
}

function isMovable(request: TransitionRequest): boolean {
  if (!("epoch" in request.fence) || request.successor || request.from === "FAILED") return false;
  if (request.steps?.some((step) => step.runId !== request.runId)) return false;
  try {
    assertTransition(request.from, request.to, { pausedReason: request.pausedReason });
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes with `moveRuns` the requests of `batch` it may write ({@link moveParams}); returns the
 * outcomes of those it wrote, by run id: each run as the statement left it, and its transition as
 * `applyTransition` makes it. A request missing from the result wrote nothing.
 */
export async function movedIn(
  ctx: PlanContext,
  batch: readonly TransitionRequest[],
): Promise<Map<string, TransitionOutcome>> {
  const moved = new Map<string, TransitionOutcome>();
  const move = moveParams(batch, ctx.inlineLimitBytes);
  if (!move) return moved;
  const byId = new Map(move.movable.map((request) => [request.runId, request]));
  for (const row of await ctx.query<RunRow>(ctx.statements.moveRuns, move.params(ctx.channel))) {
    const run = rowToRun(row);
    const request = byId.get(run.id) as TransitionRequest;
    moved.set(run.id, { run, transition: transitionRecord(request, run.lastTransitionId) });
  }
  return moved;
}

/**
 * Transitions of several runs (one request per run) in the current transaction, as one batch:
 *
 * 1. One statement locks, by primary key and in id order (the lock order of `postgres-waits.ts`),
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
