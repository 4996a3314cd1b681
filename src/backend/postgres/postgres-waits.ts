import { InvalidInputError, LeaseLostError, StorageError } from "../../core/errors.ts";
import type { RunRecord, StepRecord, TransitionRecord, WaitRecord } from "../../core/records.ts";
import type {
  ResolveWaitRequest,
  ResolveWaitResult,
  SignalRequest,
  SignalResult,
  StopRunRequest,
  SuspendRequest,
  SuspendResult,
} from "../backend.ts";
import { RUN_COLUMNS, type RunRow, rowToRun, runValues } from "../rows/run-rows.ts";
import { rowToSignal, SIGNAL_COLUMNS, type SignalRow, signalValues } from "../rows/signal-rows.ts";
import { TRANSITION_VALUE_COLUMNS, transitionParams } from "../rows/transition-rows.ts";
import { rowToWait, WAIT_COLUMNS, type WaitRow, waitValues } from "../rows/wait-rows.ts";
import { planChildSweep } from "../rules/child-sweep-rules.ts";
import { Plan } from "../rules/plan.ts";
import { planSignal, signalTarget } from "../rules/signal-rules.ts";
import { planStop } from "../rules/stop-rules.ts";
import { planDue, planResolveWait, planSuspend } from "../rules/wait-rules.ts";
import { wakePayload } from "./postgres-listener.ts";
import { batchStepParams, recordsetJson } from "./postgres-schema.ts";
import { RUN_JSON_COLUMNS, type Sql, type Statements } from "./postgres-statements.ts";

/**
 * The operations of `PostgresBackend` that go through the planners of `../rules/`: suspend,
 * resolveWait, deliverSignal, fireDueWaits and requestStop here, transitions (with what a run's end
 * does) in `postgres-transitions.ts`, batched. Each runs inside one transaction on one connection (the caller's `BEGIN … COMMIT`):
 * it locks the run row with `SELECT … FOR UPDATE`, so operations on one run take turns, loads the
 * rows the planner names, calls the planner and writes its {@link Plan} with {@link applyPlan},
 * whose wake-ups `pg_notify` sends when the transaction commits. Every commit is synchronous.
 *
 * Lock order: runs are locked in id order whenever a statement locks several. An operation on one
 * run locks that run only, except:
 * - A transition into an ended state locks the run, its parent and its children that have not
 *   ended, in one statement (`lockTransitioning`, for each run of a batch of transitions in
 *   `transitionsIn`), in id order, by primary key. The step batch's fence locks its runs
 *   (`FOR SHARE`) in id order too. Id order rather than "parent first" since
 *   it is a total order every multi-row lock can keep: `renewLeases` locks the runs it renews in id
 *   order too, so the end of a child and the renewal of its parent by the same worker cannot wait
 *   for each other either way. (Child ids derived from the parent, `<parentId>.<seq>`, sort after
 *   their parent, so for those both orders agree.) The parent is locked before its waits are read,
 *   so a child that ends while its parent pauses on it is seen by one or the other.
 * - `fireDueWaits` locks several runs with SKIP LOCKED: it never waits, so it is never part of a
 *   deadlock; a run another transaction holds is left for the next round.
 * Every later write of these operations (`writePlan`) touches only runs already locked.
 * Waits and signals are written only under their run's lock, so that lock guards them too.
 */

/** The connection of the current transaction. */
export interface PlanContext {
  query<R = unknown>(statement: Sql, values: unknown[]): Promise<R[]>;
  readonly statements: Statements;
  /** The NOTIFY channel of the wake-ups. */
  readonly channel: string;
  /** The backend's `inlineLimitBytes` (steps written with a transition go out of line like any). */
  readonly inlineLimitBytes: number;
}

/**
 * An error that must reach the caller as it was thrown (a planner's refusal, the error a
 * `resolveWait` decision threw), not be reworded as a storage failure.
 */
export class PassThrough {
  constructor(readonly error: unknown) {}
}

/** Calls a planner; what it throws passes through unchanged. */
function planned<T>(make: () => T): T {
  try {
    return make();
  } catch (error) {
    throw new PassThrough(error);
  }
}

/** The runs loaded (and locked) by an operation, by id: what {@link applyPlan} compares against. */
type Loaded = ReadonlyMap<string, RunRecord>;

function byId(runs: readonly RunRecord[]): Map<string, RunRecord> {
  return new Map(runs.map((run) => [run.id, run]));
}

async function lockRun(ctx: PlanContext, runId: string): Promise<RunRecord | undefined> {
  const [row] = await ctx.query<RunRow>(ctx.statements.lockRun, [runId]);
  return row && rowToRun(row);
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

/** Adds the writes of `from` to `into` (a run `from` changed replaces the version `into` holds). */
export function merge(into: Plan, from: Plan): void {
  for (const run of from.runs.values()) into.update(run);
  into.created.push(...from.created);
  into.transitions.push(...from.transitions);
  for (const wait of from.waits) into.wait(wait);
  into.signals.push(...from.signals);
  into.wakes.push(...from.wakes);
}

/**
 * Writes a plan in the current transaction: the changed runs (full rows; a JSON column only when
 * its value is not the one loaded), then the created runs, then the transitions, the waits (upsert
 * by (run_id, id)), the signals (upsert by (run_id, message_id), changing only `consumed_by`, so a
 * signal keeps its place in the inbox) and the wake-ups. Without created runs that is one statement
 * (`writePlan`); with them the runs are updated first, since a successor takes over the key its
 * predecessor lets go of, and the created runs' rows must exist before their transitions.
 */
export async function applyPlan(
  ctx: PlanContext,
  plan: Plan,
  loaded: Loaded,
  steps: readonly RidingSteps[] = [],
): Promise<void> {
  const runs = [...plan.runs.values()];
  const { created, transitions, waits, signals, wakes } = plan;
  const writes = runs.length + created.length + transitions.length + waits.length + signals.length + wakes.length;
  if (writes + steps.length === 0) return;
  if (created.length === 0) {
    await ctx.query(
      ctx.statements.writePlan,
      planParams(ctx, { runs, transitions, waits, signals, wakes, steps }, loaded),
    );
    return;
  }
  if (runs.length > 0) await ctx.query(ctx.statements.writePlan, planParams(ctx, { runs }, loaded));
  const written = await ctx.query<{ id: string }>(ctx.statements.insertRuns, [
    recordsetJson(
      created.map((run) => runValues(run)),
      RUN_COLUMNS,
    ),
  ]);
  if (written.length !== created.length) {
    const ids = created.map((r) => r.id).join(", ");
    throw new InvalidInputError(
      `run ${ids} cannot be created: its id is taken, or its key names another run that nothing continues`,
    );
  }
  await ctx.query(ctx.statements.writePlan, planParams(ctx, { transitions, waits, signals, wakes, steps }, loaded));
}

/** The record field of each of {@link RUN_JSON_COLUMNS}. */
const JSON_FIELDS = {
  input: "input",
  output: "output",
  error: "error",
  versions: "versions",
  meta: "meta",
  stop_request: "stopRequest",
  usage: "usage",
  acceptance: "acceptance",
} as const satisfies Record<(typeof RUN_JSON_COLUMNS)[number], keyof RunRecord>;

/** The columns of a changed run in `writePlan`: its row, then whether each JSON column changed. */
const RUN_PLAN_COLUMNS = [...RUN_COLUMNS, ...RUN_JSON_COLUMNS.map((c) => `${c}_changed`)];

/**
 * Steps of a run that ride with a plan's transition, under the epoch the transition leaves (its
 * fence checked by the planner, the run locked).
 */
export interface RidingSteps {
  epoch: number;
  steps: readonly StepRecord[];
}

/** The parameters of `writePlan` (see its column order in `postgres-statements.ts`). */
function planParams(
  ctx: PlanContext,
  part: Partial<Omit<Plan, "runs">> & { runs?: RunRecord[]; steps?: readonly RidingSteps[] },
  loaded: Loaded,
) {
  // The planners copy a run with spread, so a JSON value they did not change is the very object
  // loaded: comparing references finds what changed without serializing anything, and what did
  // not change is neither serialized nor sent (`runValues` with `before`).
  const runRows = (part.runs ?? []).map((run) => {
    const before = loaded.get(run.id);
    const changed = RUN_JSON_COLUMNS.map((c) => before === undefined || before[JSON_FIELDS[c]] !== run[JSON_FIELDS[c]]);
    return [...runValues(run, before), ...changed];
  });
  // One row per key (the last one wins), since one upsert may not touch a row twice.
  const waits = new Map((part.waits ?? []).map((w) => [`${w.runId}\u0000${w.id}`, w]));
  const signals = new Map((part.signals ?? []).map((s) => [`${s.runId}\u0000${s.messageId}`, s]));
  return [
    recordsetJson(runRows, RUN_PLAN_COLUMNS),
    recordsetJson((part.transitions ?? []).map(transitionParams), TRANSITION_VALUE_COLUMNS),
    recordsetJson([...waits.values()].map(waitValues), WAIT_COLUMNS),
    recordsetJson([...signals.values()].map(signalValues), SIGNAL_COLUMNS),
    ctx.channel,
    (part.wakes ?? []).map((wake) => (wake.kind === "reconnected" ? undefined : wakePayload(wake))).filter(Boolean),
    ...batchStepParams(part.steps ?? [], ctx.inlineLimitBytes),
  ];
}
