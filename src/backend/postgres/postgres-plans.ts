import { InvalidInputError } from "../../core/errors.ts";
import type { RunRecord, StepRecord, TransitionRecord } from "../../core/records.ts";
import { RUN_COLUMNS, type RunRow, rowToRun, runValues } from "../rows/run-rows.ts";
import { SIGNAL_COLUMNS, signalValues } from "../rows/signal-rows.ts";
import { TRANSITION_VALUE_COLUMNS, transitionParams } from "../rows/transition-rows.ts";
import { WAIT_COLUMNS, waitValues } from "../rows/wait-rows.ts";
import type { Plan } from "../rules/plan.ts";
import type { PostgresConnection, Queryable } from "./postgres-connection.ts";
import { PassThrough } from "./postgres-errors.ts";
import { batchStepParams } from "./postgres-journal-entries.ts";
import { wakePayload } from "./postgres-listener.ts";
import { RUN_JSON_COLUMNS } from "./postgres-plan-statements.ts";
import { recordsetJson } from "./postgres-recordset.ts";
import type { Sql } from "./postgres-sql.ts";
import type { Statements } from "./postgres-statements.ts";

/**
 * What the operations of `PostgresBackend` that go through the planners of `../rules/` share:
 * suspend, resolveWait, fireDueWaits and the sweep (`postgres-waits.ts`), deliverSignal
 * (`postgres-signals.ts`), requestStop (`postgres-stops.ts`), and transitions (with what a run's
 * end does) in `postgres-transitions.ts`, batched. Each runs inside one transaction on one
 * connection (the caller's `BEGIN … COMMIT`): it locks the run row with `SELECT … FOR UPDATE`, so
 * operations on one run take turns, loads the rows the planner names, calls the planner and
 * writes its {@link Plan} with {@link applyPlan}, whose wake-ups `pg_notify` sends when the
 * transaction commits. Every commit is synchronous.
 *
 * Lock order: runs are locked in id order whenever a statement locks several. An operation on one
 * run locks that run only, except:
 * - A transition into an ended state locks the run, its parent and its children that have not
 *   ended, in one statement (`lockTransitioning`, for each run of a batch of transitions in
 *   `transitionsIn`), in id order, by primary key. The step batch's fence locks its runs
 *   (`FOR SHARE`) in id order too. Id order rather than "parent first" since it is a total order
 *   every multi-row lock can keep: `renewLeases` locks the runs it renews in id order too, so the
 *   end of a child and the renewal of its parent by the same worker cannot wait for each other
 *   either way. (Child ids derived from the parent, `<parentId>.<seq>`, sort after
 *   their parent, so for those both orders agree.) The parent is locked before its waits are read,
 *   so a child that ends while its parent pauses on it is seen by one or the other.
 * - `fireDueWaits` locks several runs with SKIP LOCKED: it never waits, so it is never part of a
 *   deadlock; a run another transaction holds is left for the next round.
 * Every later write of these operations (`writePlan`) touches only runs already locked.
 * Waits and signals are written only under their run's lock, so that lock guards them too.
 */

/** What `transition` returns. */
export type TransitionOutcome = { run: RunRecord; transition: TransitionRecord };

/** The connection of the current transaction. */
export interface PlanContext {
  query<R = unknown>(statement: Sql, values: unknown[]): Promise<R[]>;
  readonly statements: Statements;
  /** The NOTIFY channel of the wake-ups. */
  readonly channel: string;
  /** The backend's `inlineLimitBytes` (steps written with a transition go out of line like any). */
  readonly inlineLimitBytes: number;
}

/** What the roles of `PostgresBackend` share: the connection (with its pool), the SQL and the settings. */
export interface PostgresShared {
  readonly db: PostgresConnection;
  readonly statements: Statements;
  /** The NOTIFY channel of the wake-ups. */
  readonly channel: string;
  /** See `PostgresBackendOptions.schema`. */
  readonly schema: string;
  /** See `PostgresBackendOptions.durability`. */
  readonly durability: "process" | "machine";
  /** See `PostgresBackendOptions.inlineLimitBytes`. */
  readonly inlineLimitBytes: number;
}

/** What the plan operations need, on the transaction's connection (or the pool, for one statement). */
export function planContext(shared: PostgresShared, on: Queryable): PlanContext {
  return {
    query: (statement, values) => shared.db.query(on, statement, values),
    statements: shared.statements,
    channel: shared.channel,
    inlineLimitBytes: shared.inlineLimitBytes,
  };
}

/** Calls a planner; what it throws passes through unchanged. */
export function planned<T>(make: () => T): T {
  try {
    return make();
  } catch (error) {
    throw new PassThrough(error);
  }
}

/** The runs loaded (and locked) by an operation, by id: what {@link applyPlan} compares against. */
export type Loaded = ReadonlyMap<string, RunRecord>;

/** The runs by id. */
export function byId(runs: readonly RunRecord[]): Map<string, RunRecord> {
  return new Map(runs.map((run) => [run.id, run]));
}

/** The run row, locked until the transaction ends. */
export async function lockRun(ctx: PlanContext, runId: string): Promise<RunRecord | undefined> {
  const [row] = await ctx.query<RunRow>(ctx.statements.lockRun, [runId]);
  return row && rowToRun(row);
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
  forked_from: "forkedFrom",
  forks: "forks",
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

/** The parameters of `writePlan` (see its column order in `postgres-plan-statements.ts`). */
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
