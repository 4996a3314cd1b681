import { BudgetExceededError, InvalidInputError } from "./errors.ts";
import { roundUsd } from "./prices.ts";
import type { RunUsage, StepKind, StepRecord } from "./records.ts";

/**
 * Run budgets (DESIGN §6): limits on what a run may use, checked before each step and settled
 * after it; going over one ends the run BLOCKED with the figure and the limit. A child run gets
 * at most what its parent has left, and its usage rolls up into the parent's. Nothing here does I/O.
 */

/** What a run may use; a key left out has no limit. A limit of 0 refuses every step that would spend it. */
export interface Budget {
  /** Model tokens, input and output together. */
  tokens?: number;
  /** Model cost in US dollars, from the runtime's price table. */
  costUsd?: number;
  /** Model calls (`ctx.llm` steps). */
  modelCalls?: number;
  /** Tool calls (`ctx.tool` steps). */
  toolCalls?: number;
  /** Journaled steps of every kind. */
  steps?: number;
  /** Milliseconds from the run's start. */
  wallTimeMs?: number;
}

/** One budget key. */
export type BudgetKey = keyof Budget;

/** Every budget key, in the order they are checked and reported. */
export const BUDGET_KEYS: readonly BudgetKey[] = Object.freeze([
  "tokens",
  "costUsd",
  "modelCalls",
  "toolCalls",
  "steps",
  "wallTimeMs",
]);

/**
 * Checks a budget handed in from outside (a run's options, a spawn's options, the runtime's
 * default) and returns a clean copy without keys set to `undefined`.
 * @param where what the budget belongs to, for the message (e.g. `run("ops", "clean") options.budget`).
 * @throws InvalidInputError naming each bad key and the rule: an unknown key, or a value that is
 * not a finite number >= 0.
 */
export function validateBudget(budget: unknown, where: string): Budget {
  if (budget === null || typeof budget !== "object" || Array.isArray(budget)) {
    throw new InvalidInputError(
      `${where}: a budget is an object with any of ${BUDGET_KEYS.join(", ")} (got ${describe(budget)})`,
      [{ path: [], message: "expected an object" }],
    );
  }
  const issues: { path: PropertyKey[]; message: string }[] = [];
  const clean: Budget = {};
  for (const [key, value] of Object.entries(budget)) {
    if (!(BUDGET_KEYS as readonly string[]).includes(key)) {
      issues.push({ path: [key], message: `unknown budget key "${key}" (known: ${BUDGET_KEYS.join(", ")})` });
      continue;
    }
    if (value === undefined) continue;
    if (typeof value !== "number") {
      issues.push({ path: [key], message: `budget "${key}" must be a number (got ${describe(value)})` });
    } else if (!Number.isFinite(value)) {
      issues.push({
        path: [key],
        message: `budget "${key}" must be a finite number (got ${value}); leave the key out for no limit`,
      });
    } else if (value < 0) {
      issues.push({ path: [key], message: `budget "${key}" must be >= 0 (got ${value})` });
    } else {
      clean[key as BudgetKey] = value;
    }
  }
  if (issues.length > 0) {
    throw new InvalidInputError(`${where}: ${issues.map((i) => i.message).join("; ")}`, issues);
  }
  return clean;
}

/** Merges budgets key by key; a later one overrides an earlier one, and `undefined` sets nothing. */
export function mergeBudgets(...budgets: (Budget | undefined)[]): Budget {
  const out: Budget = {};
  for (const budget of budgets) {
    if (!budget) continue;
    for (const key of BUDGET_KEYS) {
      const value = budget[key];
      if (value !== undefined) out[key] = value;
    }
  }
  return out;
}

/**
 * The budget a child run gets: per key the smaller of what it asks for and what its parent has
 * left, so a child never gets more than that; a key only one side has is kept as it is.
 */
export function capBudget(requested: Budget, remaining: Budget): Budget {
  const out: Budget = {};
  for (const key of BUDGET_KEYS) {
    const a = requested[key];
    const b = remaining[key];
    if (a !== undefined && b !== undefined) out[key] = Math.min(a, b);
    else if (a !== undefined) out[key] = a;
    else if (b !== undefined) out[key] = b;
  }
  return out;
}

/** Nothing used. */
export const EMPTY_USAGE: Readonly<RunUsage> = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  modelCalls: 0,
  costUsd: 0,
  toolCalls: 0,
  steps: 0,
});

const USAGE_KEYS = ["inputTokens", "outputTokens", "modelCalls", "costUsd", "toolCalls", "steps"] as const;

/** The sum of two usages (cost rounded to 1e-9). */
export function addRunUsage(a: RunUsage, b: Partial<RunUsage>): RunUsage {
  return {
    inputTokens: a.inputTokens + (b.inputTokens ?? 0),
    outputTokens: a.outputTokens + (b.outputTokens ?? 0),
    modelCalls: a.modelCalls + (b.modelCalls ?? 0),
    costUsd: roundUsd(a.costUsd + (b.costUsd ?? 0)),
    toolCalls: a.toolCalls + (b.toolCalls ?? 0),
    steps: a.steps + (b.steps ?? 0),
  };
}

/**
 * What a run used, from its steps: the model usage on every step, one tool call per `tool` step,
 * one step per step; and the usage of each child it waited for — a `wait` step named
 * `result:<childRunId>` whose result carries the child's `usage` (at `result.usage`, or at
 * `result.value.usage` where the result is the wait's resolution), so children roll up —
 * unless `children` is false (the run's own usage only).
 */
export function usageOfSteps(steps: readonly StepRecord[], options: { children?: boolean } = {}): RunUsage {
  let total: RunUsage = { ...EMPTY_USAGE };
  for (const step of steps) {
    const u = step.usage;
    // A missing or non-finite figure counts as 0.
    total = addRunUsage(total, {
      inputTokens: finite(u?.inputTokens),
      outputTokens: finite(u?.outputTokens),
      modelCalls: finite(u?.modelCalls),
      costUsd: finite(u?.costUsd),
      toolCalls: step.kind === "tool" ? 1 : 0,
      steps: 1,
    });
    if (options.children !== false && step.kind === "wait" && step.name.startsWith("result:")) {
      const child = childUsage(step.result);
      if (child) total = addRunUsage(total, child);
    }
  }
  return total;
}

function finite(n: number | undefined): number {
  return typeof n === "number" && Number.isFinite(n) ? n : 0;
}

function childUsage(result: unknown): Partial<RunUsage> | undefined {
  if (!isRecord(result)) return undefined;
  const usage = isRecord(result.usage) ? result.usage : isRecord(result.value) ? result.value.usage : undefined;
  if (!isRecord(usage)) return undefined;
  const out: Partial<RunUsage> = {};
  let any = false;
  for (const key of USAGE_KEYS) {
    const value = usage[key];
    if (typeof value === "number" && Number.isFinite(value)) {
      out[key] = value;
      any = true;
    }
  }
  return any ? out : undefined;
}

/**
 * Keeps a run's usage against its budget while it runs. Built from the usage its journal holds
 * (see {@link usageOfSteps}); `add` settles each step after it; `check` is asked before each new
 * step.
 *
 * Rules of `check`, per key that has a limit (none are exceeded without one):
 * - `wallTimeMs`: any step, when `now - startedAt` is past the limit;
 * - `steps`: any step that would be number `steps + 1` > the limit;
 * - `toolCalls`: a `tool` step that would be call number `toolCalls + 1` > the limit;
 * - `modelCalls`: an `llm` step that would be call number `modelCalls + 1` > the limit;
 * - `tokens`: an `llm` or `tool` step (a tool may call models) once the tokens used reach the limit;
 * - `costUsd`: an `llm` or `tool` step once the cost reaches the limit, and an `llm` step whose
 *   maximum output (`maxCostUsd`) would take the cost past it.
 *
 * Other steps (waits, values, markers, domain reads, children) spend neither tokens nor cost
 * themselves, so those two limits never stop them; {@link BudgetMeter.overrun} tells whether a
 * figure already went past its limit.
 */
export class BudgetMeter {
  /** The limits. */
  readonly budget: Readonly<Budget>;
  readonly #startedAt: number;
  readonly #label: string;
  #used: RunUsage;

  /**
   * @param budget the run's limits.
   * @param startedAt epoch ms the run started, for `wallTimeMs`.
   * @param used what the run used so far (its steps and children).
   * @param options `runId` names the run in messages.
   */
  constructor(budget: Budget, startedAt: number, used: RunUsage, options: { runId?: string } = {}) {
    this.budget = Object.freeze(mergeBudgets(budget));
    this.#startedAt = startedAt;
    this.#used = { ...used };
    this.#label = options.runId === undefined ? "run" : `run ${options.runId}`;
  }

  /** What the run used so far (a copy). */
  get used(): RunUsage {
    return { ...this.#used };
  }

  /** Settles what a step used. */
  add(usage: Partial<RunUsage>): void {
    this.#used = addRunUsage(this.#used, usage);
  }

  /**
   * Whether the next step may run: the error to end the run with, or undefined. See the class
   * documentation for the rules.
   * @param next.maxCostUsd for an `llm` step, the most its declared maximum output can cost.
   */
  check(next: { kind: StepKind; now: number; maxCostUsd?: number }): BudgetExceededError | undefined {
    const b = this.budget;
    const u = this.#used;
    const spends = next.kind === "llm" || next.kind === "tool";
    const elapsed = next.now - this.#startedAt;
    if (b.wallTimeMs !== undefined && elapsed > b.wallTimeMs) {
      return this.#exceeded(
        "wallTimeMs",
        elapsed,
        `the run has been going ${elapsed} ms, the limit is ${b.wallTimeMs} ms`,
      );
    }
    if (b.steps !== undefined && u.steps + 1 > b.steps) {
      return this.#exceeded("steps", u.steps + 1, `this step would be number ${u.steps + 1}, the limit is ${b.steps}`);
    }
    if (next.kind === "tool" && b.toolCalls !== undefined && u.toolCalls + 1 > b.toolCalls) {
      return this.#exceeded(
        "toolCalls",
        u.toolCalls + 1,
        `this call would be number ${u.toolCalls + 1}, the limit is ${b.toolCalls}`,
      );
    }
    if (next.kind === "llm" && b.modelCalls !== undefined && u.modelCalls + 1 > b.modelCalls) {
      return this.#exceeded(
        "modelCalls",
        u.modelCalls + 1,
        `this model call would be number ${u.modelCalls + 1}, the limit is ${b.modelCalls}`,
      );
    }
    const tokens = u.inputTokens + u.outputTokens;
    if (spends && b.tokens !== undefined && tokens >= b.tokens) {
      return this.#exceeded(
        "tokens",
        tokens,
        `${tokens} tokens used so far, the limit is ${b.tokens}: none are left for this ${next.kind} call`,
      );
    }
    if (spends && b.costUsd !== undefined) {
      if (u.costUsd >= b.costUsd) {
        return this.#exceeded(
          "costUsd",
          u.costUsd,
          `cost so far ${usd(u.costUsd)} has reached the limit ${usd(b.costUsd)}: nothing is left for this ${next.kind} call`,
        );
      }
      const most = next.kind === "llm" ? (next.maxCostUsd ?? 0) : 0;
      if (roundUsd(u.costUsd + most) > b.costUsd) {
        return this.#exceeded(
          "costUsd",
          roundUsd(u.costUsd + most),
          `cost so far ${usd(u.costUsd)} + at most ${usd(most)} for this call's maximum output would pass the limit ${usd(b.costUsd)}`,
        );
      }
    }
    return undefined;
  }

  /**
   * After a step is settled: the error for a figure already past its limit (tokens, cost, model
   * calls, tool calls or steps used > the limit), or undefined. Wall time is left to `check`.
   */
  overrun(): BudgetExceededError | undefined {
    const b = this.budget;
    const u = this.#used;
    const tokens = u.inputTokens + u.outputTokens;
    if (b.tokens !== undefined && tokens > b.tokens) {
      return this.#exceeded("tokens", tokens, `${tokens} tokens used, the limit is ${b.tokens}`);
    }
    if (b.costUsd !== undefined && u.costUsd > b.costUsd) {
      return this.#exceeded("costUsd", u.costUsd, `cost ${usd(u.costUsd)} passed the limit ${usd(b.costUsd)}`);
    }
    for (const key of ["modelCalls", "toolCalls", "steps"] as const) {
      const limit = b[key];
      if (limit !== undefined && u[key] > limit) {
        return this.#exceeded(key, u[key], `${u[key]} used, the limit is ${limit}`);
      }
    }
    return undefined;
  }

  /**
   * What is left, per key that has a limit: the limit minus what was used, never below 0
   * (`wallTimeMs`: the limit minus the time since the run started). A child's budget is capped by
   * it (see {@link capBudget}).
   */
  remaining(now: number): Budget {
    const b = this.budget;
    const u = this.#used;
    const out: Budget = {};
    const left = (limit: number, used: number) => Math.max(0, limit - used);
    if (b.tokens !== undefined) out.tokens = left(b.tokens, u.inputTokens + u.outputTokens);
    if (b.costUsd !== undefined) out.costUsd = roundUsd(left(b.costUsd, u.costUsd));
    if (b.modelCalls !== undefined) out.modelCalls = left(b.modelCalls, u.modelCalls);
    if (b.toolCalls !== undefined) out.toolCalls = left(b.toolCalls, u.toolCalls);
    if (b.steps !== undefined) out.steps = left(b.steps, u.steps);
    if (b.wallTimeMs !== undefined) out.wallTimeMs = left(b.wallTimeMs, now - this.#startedAt);
    return out;
  }

  #exceeded(budget: BudgetKey, figure: number, detail: string): BudgetExceededError {
    const limit = this.budget[budget] as number;
    return new BudgetExceededError(`budget "${budget}" of ${this.#label} exceeded: ${detail}`, {
      budget,
      figure,
      limit,
    });
  }
}

/** `$0.0123`: up to 6 decimals without trailing zeros; tiny amounts keep 2 significant digits. */
function usd(amount: number): string {
  if (amount === 0) return "$0";
  const fixed = amount.toFixed(6).replace(/0+$/, "").replace(/\.$/, "");
  return `$${fixed === "0" || fixed === "-0" ? amount.toPrecision(2) : fixed}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return `the string ${JSON.stringify(value)}`;
  if (typeof value === "object") return "an object";
  return `${typeof value} ${String(value)}`;
}
