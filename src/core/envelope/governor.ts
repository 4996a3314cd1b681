import { type Budget, BudgetMeter, usageOfSteps, validateBudget } from "../budget.ts";
import type { BudgetExceededError, PolicyDeniedError } from "../errors.ts";
import { evaluatePolicies, type Policy, type PolicyCall, policyDeniedError } from "../policies.ts";
import { costOf, maxCostOf, type PriceTable } from "../prices.ts";
import type { Json, RunRecord, RunUsage, StepKind, StepRecord } from "../records.ts";

/**
 * Governance of one run's execution (DESIGN §6): the policies asked before every tool, model,
 * domain and spawn call, and the budget checked before each step and settled after it. The
 * envelope asks; a refusal ends the run BLOCKED (the workflow cannot catch it).
 */
export class Governor {
  readonly #run: RunRecord;
  readonly #policies: readonly Policy[];
  readonly #prices: PriceTable;
  readonly #meter: BudgetMeter;
  readonly #journal: ReadonlyMap<number, StepRecord>;
  #children: boolean;

  constructor(options: {
    run: RunRecord;
    policies: readonly Policy[];
    prices: PriceTable;
    journal: readonly StepRecord[];
  }) {
    this.#run = options.run;
    this.#policies = options.policies;
    this.#prices = options.prices;
    this.#journal = new Map(options.journal.map((s) => [s.seq, s]));
    this.#children = options.journal.some((s) => s.kind === "child");
    const budget = options.run.meta.budget;
    this.#meter = new BudgetMeter(
      budget && typeof budget === "object" ? validateBudget(budget, `the budget of run ${options.run.id}`) : {},
      options.run.createdAt,
      usageOfSteps(options.journal),
      { runId: options.run.id },
    );
  }

  /**
   * Asks the policies about a call whose step will be `seq`. Returns the approval one of them
   * requires, if any; throws `PolicyDeniedError` for a denial. A call the journal holds as done
   * already (under the policies in force then) is not asked again; nor, for an approval, is one
   * whose history shows it ran without one.
   */
  ask(
    kind: PolicyCall["kind"],
    name: string,
    args: unknown,
    seq: number,
  ): { action: string; approvers: string[]; expiresInMs: number } | undefined {
    if (this.#policies.length === 0) return undefined;
    const stepKind: StepKind = kind === "spawn" ? "child" : kind;
    const recorded = this.#journal.get(seq);
    const same = recorded?.kind === stepKind && recorded.name === name;
    if (same && recorded.status === "completed") return undefined;
    const run = this.#run;
    const call: PolicyCall = {
      kind,
      agent: run.agent,
      name,
      args: (args ?? null) as Json,
      run: {
        id: run.id,
        agent: run.agent,
        workflow: run.workflow,
        input: run.input,
        meta: run.meta,
        parentRunId: run.parentRunId,
      },
    };
    const answer = evaluatePolicies(this.#policies, call);
    if (answer.kind === "deny") throw policyDeniedError(answer, call) satisfies PolicyDeniedError;
    if (answer.kind === "approval" && !same) {
      return { action: answer.action, approvers: answer.approvers, expiresInMs: answer.expiresInMs };
    }
    return undefined;
  }

  /** Checks the budget before a new step; returns the error to end the run with, or undefined. */
  check(
    kind: StepKind,
    now: number,
    model?: { name: string | undefined; maxOutputTokens: number | undefined },
  ): BudgetExceededError | undefined {
    const maxCostUsd =
      model?.maxOutputTokens !== undefined ? maxCostOf(this.#prices, model.name, model.maxOutputTokens) : undefined;
    return this.#meter.check({ kind, now, ...(maxCostUsd !== undefined ? { maxCostUsd } : {}) });
  }

  /** Counts a step that starts now (not one the journal holds already). */
  started(kind: StepKind): void {
    if (kind === "child") this.#children = true;
    this.#meter.add({ steps: 1, toolCalls: kind === "tool" ? 1 : 0 });
  }

  /**
   * Whether {@link usage} is the run's whole usage: it is unless the run spawned children, whose
   * usage reaches it when they end (and is then read from the journal).
   */
  get exact(): boolean {
    return !this.#children;
  }

  /** Settles what a finished step used (its model usage). */
  settled(step: StepRecord): void {
    const u = step.usage;
    if (!u) return;
    this.#meter.add({
      inputTokens: u.inputTokens,
      outputTokens: u.outputTokens,
      modelCalls: u.modelCalls,
      costUsd: u.costUsd ?? 0,
    });
  }

  /** The cost of a model call by the model's id, from the price table (0 when it has no price). */
  cost(model: string | undefined, usage: { inputTokens: number; outputTokens: number }): number {
    return costOf(this.#prices, model, usage);
  }

  /** What the run used so far, children that ended included. */
  usage(): RunUsage {
    return this.#meter.used;
  }

  /** What is left of the run's budget, for a child it spawns (each key with a limit). */
  remaining(now: number): Budget {
    return this.#meter.remaining(now);
  }
}
