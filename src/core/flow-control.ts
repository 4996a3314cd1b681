import { InvalidDefinitionError, InvalidInputError } from "./errors.ts";
import type { RunRecord } from "./records.ts";
import type { RunState } from "./run-state.ts";

/**
 * Flow control of runs (DESIGN §7, "Flow control"): concurrency keys (at most N runs with one key
 * hold a lease at once, across every worker on the backend) and priorities (the claim order).
 * Pure rules, shared by the runtime (resolving a run's settings) and every backend (claiming).
 */

/**
 * Milliseconds of waiting worth one priority level: a run's effective priority is
 * `priority + waited / PRIORITY_AGING_MS`, so a run waits at most `(p - priority) * 60 s` behind
 * runs of a higher priority `p` that arrive after it. Fixed: the backends' claim indexes hold it.
 */
export const PRIORITY_AGING_MS = 60_000;

/** The range of a run's priority (integers; higher is claimed first). */
export const PRIORITY_RANGE = { min: -1000, max: 1000 } as const;

/**
 * The claim order of a run, smallest first: its creation time less its priority in aging
 * intervals. Ordering by it is ordering by effective priority (higher first), then age.
 */
export function claimOrder(run: Pick<RunRecord, "createdAt" | "priority">): number {
  return run.createdAt - (run.priority ?? 0) * PRIORITY_AGING_MS;
}

/** A run's flow-control settings as stored with it (`RunRecord` fields). */
export interface RunFlow {
  concurrencyKey?: string;
  concurrencyLimit?: number;
  priority?: number;
}

/**
 * The concurrency of an agent's or a workflow's runs (`defineAgent({ flow })`): at most `limit`
 * runs with one key hold a lease at once. Without `key`, every run of the agent (or of the
 * workflow, for a workflow's setting) shares one key: a global limit.
 */
export interface ConcurrencySetting<I = any> {
  /** Runs with one key that may hold a lease at once (an integer >= 1). */
  limit: number;
  /** The key of a run, or a function of its input. @default the agent's (or workflow's) name */
  key?: string | ((input: I) => string);
}

/** Flow-control defaults of an agent's or a workflow's runs; a run's own options win. */
export interface FlowSetting<I = any> {
  concurrency?: ConcurrencySetting<I>;
  /** The priority of its runs, or a function of the input. @default 0 */
  priority?: number | ((input: I) => number);
}

/** The flow-control defaults of an agent (`defineAgent({ flow })`): the agent's, and per workflow. */
export interface AgentFlow extends FlowSetting {
  /** Per workflow, over the agent's: a workflow's `concurrency` replaces the agent's. */
  workflows?: Readonly<Record<string, FlowSetting>>;
}

/** The flow-control options of one run (`runtime.run`). */
export interface RunFlowOptions {
  /** The run's concurrency key; its limit is `concurrencyLimit`, or the definition's. */
  concurrencyKey?: string;
  /** Runs with the key that may hold a lease at once. @default the definition's `concurrency.limit` */
  concurrencyLimit?: number;
  /** Claim order: higher first, then age. @default the definition's, else 0 */
  priority?: number;
}

/** Throws `InvalidDefinitionError` when `flow` (of agent `agent`) cannot work as written. */
export function validateAgentFlow(agent: string, flow: AgentFlow | undefined, workflows: readonly string[]): void {
  if (flow === undefined) return;
  const check = (where: string, setting: FlowSetting) => {
    const limit = setting.concurrency?.limit;
    if (setting.concurrency !== undefined && !(Number.isInteger(limit) && (limit as number) >= 1)) {
      throw new InvalidDefinitionError(`${where} concurrency.limit must be an integer >= 1 (got ${String(limit)})`);
    }
    if (typeof setting.priority === "number") priorityProblem(setting.priority, InvalidDefinitionError, where);
  };
  check(`agent "${agent}"`, flow);
  for (const [name, setting] of Object.entries(flow.workflows ?? {})) {
    if (!workflows.includes(name)) {
      throw new InvalidDefinitionError(
        `flow.workflows.${name} of agent "${agent}" names no workflow (workflows: ${workflows.join(", ")})`,
      );
    }
    check(`workflow "${name}" of agent "${agent}"`, setting);
  }
}

function priorityProblem(
  priority: unknown,
  Err: typeof InvalidDefinitionError | typeof InvalidInputError,
  where: string,
): number {
  if (typeof priority === "number" && Number.isInteger(priority)) {
    if (priority >= PRIORITY_RANGE.min && priority <= PRIORITY_RANGE.max) return priority;
  }
  throw new Err(
    `${where} priority must be an integer from ${PRIORITY_RANGE.min} to ${PRIORITY_RANGE.max} (got ${String(priority)})`,
  );
}

/**
 * The flow-control settings of a new run of `agent`'s `workflow`: the run's options over the
 * workflow's defaults over the agent's. A concurrency key without a limit anywhere is refused
 * (`InvalidInputError`), as is a priority out of {@link PRIORITY_RANGE}.
 */
export function resolveRunFlow(
  agent: string,
  workflow: string,
  flow: AgentFlow | undefined,
  input: unknown,
  options: RunFlowOptions,
): RunFlow {
  const own = flow?.workflows?.[workflow];
  const concurrency = own?.concurrency ?? flow?.concurrency;
  const defaultKey = own?.concurrency ? `${agent}.${workflow}` : agent;
  const declared = concurrency?.key;
  const key =
    options.concurrencyKey ??
    (concurrency === undefined
      ? undefined
      : typeof declared === "function"
        ? declared(input)
        : (declared ?? defaultKey));
  const limit = options.concurrencyLimit ?? concurrency?.limit;
  const where = `run of workflow "${workflow}" of agent "${agent}":`;
  const result: RunFlow = {};
  if (key !== undefined) {
    if (typeof key !== "string" || key === "") {
      throw new InvalidInputError(`${where} the concurrency key must be a non-empty string (got ${String(key)})`);
    }
    if (!(Number.isInteger(limit) && (limit as number) >= 1)) {
      throw new InvalidInputError(
        `${where} concurrency key "${key}" needs a limit, an integer >= 1 (got ${String(limit)}); pass concurrencyLimit or declare flow.concurrency on the agent`,
      );
    }
    result.concurrencyKey = key;
    result.concurrencyLimit = limit as number;
  }
  const declaredPriority = own?.priority ?? flow?.priority;
  const priority =
    options.priority ?? (typeof declaredPriority === "function" ? declaredPriority(input) : declaredPriority);
  if (priority !== undefined && priorityProblem(priority, InvalidInputError, where) !== 0) result.priority = priority;
  return result;
}

/** The flow-control settings `run` carries (for its `continueAsNew` successor, which keeps them). */
export function runFlowOf(run: RunRecord): RunFlow {
  const flow: RunFlow = {};
  if (run.concurrencyKey !== undefined && run.concurrencyLimit !== undefined) {
    flow.concurrencyKey = run.concurrencyKey;
    flow.concurrencyLimit = run.concurrencyLimit;
  }
  if (run.priority !== undefined) flow.priority = run.priority;
  return flow;
}

/** Runnable states whose lease, while live, holds a slot of the run's key. */
const CLAIMABLE_HOLDING: ReadonlySet<RunState> = new Set<RunState>([
  "PENDING",
  "RESUMING",
  "CANCELLING",
  "RECONCILING",
]);
/** Owned states that are not runnable: a run in one holds its slot until it leaves it. */
const HELD_STATES: ReadonlySet<RunState> = new Set<RunState>(["RUNNING", "COMPENSATING"]);

/**
 * Whether `run` holds a slot of its concurrency key at `now`: it is leased and either RUNNING or
 * COMPENSATING (whatever its lease says: its worker may still be executing it until it is
 * interrupted) or runnable under a live lease (claimed, not started yet). Every backend counts
 * exactly these.
 */
export function holdsSlot(run: RunRecord, now: number): boolean {
  if (run.concurrencyKey === undefined || run.leaseOwner === null) return false;
  if (HELD_STATES.has(run.state)) return true;
  return CLAIMABLE_HOLDING.has(run.state) && run.leaseExpiresAt !== null && run.leaseExpiresAt > now;
}

/**
 * What a run not yet claimed waits for, for `cairn runs` / `cairn show` / the dashboard: a
 * runnable keyed run without a live lease is "waiting for a slot" of its key (or for a worker),
 * with its priority when it has one other than 0.
 */
export function slotWait(
  run: Pick<RunRecord, "state" | "concurrencyKey" | "concurrencyLimit" | "priority" | "leaseOwner" | "leaseExpiresAt">,
  now: number,
): string | undefined {
  if (run.concurrencyKey === undefined || !CLAIMABLE_HOLDING.has(run.state)) return undefined;
  if (run.leaseOwner !== null && run.leaseExpiresAt !== null && run.leaseExpiresAt > now) return undefined;
  const priority = run.priority ? `, priority ${run.priority}` : "";
  return `waiting for a slot of key "${run.concurrencyKey}" (limit ${run.concurrencyLimit})${priority}`;
}
