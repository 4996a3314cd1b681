import { CairnError, type CairnErrorOptions, markErrorClasses } from "./cairn-error.ts";

/* Governance: policies and budgets (DESIGN §6); both end the run BLOCKED. */

/** A policy denied a call before it ran; the run ends BLOCKED naming the policy and its version. */
export class PolicyDeniedError extends CairnError {
  readonly code = "POLICY_DENIED" as const;
  readonly policy: string;
  readonly policyVersion: string;
  constructor(message: string, details: { policy: string; policyVersion: string }, options?: CairnErrorOptions) {
    super(message, options);
    this.policy = details.policy;
    this.policyVersion = details.policyVersion;
  }
}

/** A run went over one of its budgets; the run ends BLOCKED with the figure and the limit. */
export class BudgetExceededError extends CairnError {
  readonly code = "BUDGET_EXCEEDED" as const;
  /** Which budget: `tokens`, `costUsd`, `modelCalls`, `toolCalls`, `steps` or `wallTimeMs`. */
  readonly budget: string;
  /** The figure the step would reach. */
  readonly figure: number;
  readonly limit: number;
  constructor(
    message: string,
    details: { budget: string; figure: number; limit: number },
    options?: CairnErrorOptions,
  ) {
    super(message, options);
    this.budget = details.budget;
    this.figure = details.figure;
    this.limit = details.limit;
  }
}

markErrorClasses({ PolicyDeniedError, BudgetExceededError });
