import { storableText } from "../../../core/text.ts";
import { assertTransition } from "../../../core/transitions.ts";
import type { TransitionRequest } from "../../contract/transition-store.ts";
import { encode } from "../../rows/json-columns.ts";
import { type RunRow, rowToRun } from "../../rows/run-rows.ts";
import { hasEnded } from "../../rules/plan.ts";
import { transitionRecord, wakeFor } from "../../rules/transition-rules.ts";
import { batchStepParams } from "../postgres-journal-entries.ts";
import { wakePayload } from "../postgres-listener.ts";
import type { PlanContext, TransitionOutcome } from "../postgres-plans.ts";
import { recordsetJson } from "../postgres-recordset.ts";
import { MOVE_COLUMNS } from "./postgres-move-statements.ts";

/**
 * The moves of a batch of transitions (DESIGN §7): the requests that need nothing but their
 * run's row, written by one statement (`moveRuns`, `postgres-move-statements.ts`) before the
 * others go through the planners (`postgres-transitions.ts`).
 */

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
  // The statement checks no expected last transition: the planners do (`applyTransition`).
  if (request.expectLastTransitionId !== undefined) return false;
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
