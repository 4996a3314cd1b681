import type { z } from "zod";
import type { Budget } from "./budget.ts";
import type { ToolContext, ToolSignature, ToolSignatures, WorkflowContext } from "./context.ts";
import type { AgentFlow } from "./flow-control.ts";
import type { RateLimitDeclaration } from "./rate-limits.ts";
import type { RetryPolicy } from "./retry-policy.ts";

/**
 * Agent, tool and workflow definitions: what `defineAgent`, `defineTool` and the decorators
 * produce and what the runtime registers.
 */

/** Options a tool takes besides its function. */
export interface ToolOptions<S extends z.ZodType = z.ZodType> {
  /** What the tool does (shown to operators, and to models by the agent loop). */
  description?: string;
  /** zod schema the arguments are validated against before every run; a bad input is an `InvalidInputError`. */
  input?: S;
  /** Retry policy; see `RetryPolicy` for the defaults (1 s, ×2, 100 s, 5 attempts, jitter). */
  retry?: RetryPolicy;
  /** Timeout of one attempt; the attempt's `ctx.signal` fires when it passes. @default no timeout */
  startToCloseTimeoutMs?: number;
  /** The attempt fails when it has not called `ctx.heartbeat()` for this long. @default no heartbeat timeout */
  heartbeatTimeoutMs?: number;
  /**
   * The tool needs an approval before every run: `ctx.tool` asks for one (PAUSED,
   * awaiting_approval) with the tool's arguments as the payload, and runs the tool once approved.
   * A denial or an expiry throws `ApprovalDeniedError` / `ApprovalExpiredError` from `ctx.tool`.
   */
  approval?: ToolApproval;
  /**
   * The tool changes the outside world (DESIGN §5): its intent is committed before it runs, it
   * gets an idempotency key (`ctx.idempotencyKey`) that every attempt and replay shares, and its
   * receipt is recorded. An attempt that ends without a definite outcome is settled by `status`.
   */
  effect?: ToolEffect;
  /**
   * A rate limit on its calls, shared by every worker on the backend (DESIGN §4 *Rate limits*):
   * the name of one of the runtime's `rateLimits` (`"search-api"`, shared with whatever else names
   * it), or a limit of its own (`{ limit: 20, per: "1s" }`, kept under `tool:<agent>.<tool>`).
   * Each attempt takes a slot just before it runs (a replayed call takes none); an attempt over
   * the limit waits in process, logged and sent as a `step.rate_limited` event, and stops waiting
   * when the run is cancelled. An attempt that fails with a `retryAfterMs` (a 429 with
   * Retry-After, e.g. `ModelUnavailableError`) holds the limit that long for every worker.
   * @default no limit
   */
  rateLimit?: RateLimitDeclaration;
}

/** How an effect tool's outcome is made safe (see {@link ToolOptions.effect}). */
export interface ToolEffect<Args = any, Result = any> {
  /**
   * The effect's own key, from its arguments (e.g. a transfer id); it must give the same key for
   * the same logical effect. The key the tool sees is namespaced: `<agent>/<tool>:<key>`.
   * @default `<runId>:<seq>`
   */
  key?: (args: Args, run: { runId: string; seq: number }) => string;
  /**
   * Asks the outside world whether the effect with `ctx.idempotencyKey` happened. Called when an
   * attempt ended without a definite outcome (its process died, it timed out, it threw anything
   * but `EffectNotAppliedError`), before anything else: `applied` records the receipt (and
   * `result`, the tool's result) without running again; `not_applied` retries under the tool's
   * policy; `unknown` (or a query that throws) sends the run to NEEDS_RECONCILIATION.
   */
  status?: (ctx: EffectStatusContext, args: Args) => Promise<EffectStatusAnswer<Result>> | EffectStatusAnswer<Result>;
  /**
   * The tool of the same agent that undoes this effect when the run compensates; called with
   * `args(args, result)` (default: the same arguments). Compensations are effects of their own.
   */
  compensate?: string | { tool: string; args?: (args: Args, result: Result) => unknown };
  /**
   * Running it twice with the same key changes nothing more: without a `status` query, an
   * attempt of unknown outcome is retried instead of sent to reconciliation.
   * @default false
   */
  idempotent?: boolean;
  /** The receipt to record from the result. @default `{ idempotencyKey, attempt }` */
  receipt?: (result: Result) => unknown;
}

/** What an effect's `status` query sees. */
export interface EffectStatusContext {
  readonly runId: string;
  readonly agent: string;
  readonly tool: string;
  readonly seq: number;
  /** The key every attempt used. */
  readonly idempotencyKey: string;
  /** Fired when the run is stopped. */
  readonly signal: AbortSignal;
}

/** The answer of an effect's `status` query. */
export type EffectStatusAnswer<Result = unknown> =
  | { outcome: "applied"; result?: Result; receipt?: unknown }
  | { outcome: "not_applied" }
  | { outcome: "unknown"; note?: string };

/** The approval a tool needs (see {@link ToolOptions.approval}). */
export interface ToolApproval {
  /** @default `tool:<name>` */
  action?: string;
  /** Who may decide; anyone when omitted. */
  approvers?: readonly string[];
  /** How long the approval stays open. */
  expiresInMs: number;
}

/** A tool: a named async function that is one durable step. */
export interface ToolDefinition<Args = any, Result = any> extends ToolSignature<Args, Result>, ToolOptions {
  readonly kind: "tool";
  run(ctx: ToolContext, args: Args): Promise<Result> | Result;
}

/** A workflow function. */
export type WorkflowFunction<T extends ToolSignatures = ToolSignatures, I = any, O = any> = (
  ctx: WorkflowContext<T>,
  input: I,
) => Promise<O>;

/** Map of tool name to definition. */
export type ToolMap = Record<string, ToolDefinition<any, any>>;

/** An agent: a named group of tools and workflows. */
export interface AgentDefinition<
  T extends ToolMap = ToolMap,
  W extends Record<string, WorkflowFunction<T>> = Record<string, WorkflowFunction<T>>,
  N extends string = string,
> {
  readonly kind: "agent";
  /** Its name, as written in `defineAgent` (a literal type: `CairnClient<typeof agents>` finds it by name). */
  readonly name: N;
  readonly description: string;
  /** Version of the workflow code, recorded on every transition. @default "1" */
  readonly version: string;
  /**
   * Older versions this code still runs (after `ctx.patched` branches for them): a run started on
   * a version that is neither `version` nor listed here fails with `VERSION_MISMATCH` instead of
   * replaying against code it was not written for, and can be resumed once such code is deployed.
   * @default []
   */
  readonly compatibleVersions: readonly string[];
  /**
   * When its runs undo their applied effects (DESIGN §5): `on_failure` (the workflow failed or
   * was blocked), `on_failure_or_cancel`, or `never`. A run's own `compensate` option wins.
   * @default "never"
   */
  readonly compensate: CompensateMode;
  /** Budgets every run of this agent gets unless the run sets its own (per key). @default {} */
  readonly budget: Budget;
  readonly tools: T;
  readonly workflows: W;
  /**
   * Input schemas of some of its workflows (zod): a run's input is checked when it is started
   * (`runtime.run` refuses a bad one and starts nothing) and again before each execution (a run
   * started another way — a child, a continue-as-new, older code — fails with `INVALID_INPUT`
   * before any of its code runs); the workflow gets what the schema parses the input to.
   * @default {}
   */
  readonly inputs?: WorkflowInputs<W>;
  /**
   * Flow control of its runs (DESIGN §7, "Flow control"): a concurrency limit (global, or per key
   * from the input) and a priority, for the agent and per workflow; a run's own options win.
   * @default none
   */
  readonly flow?: AgentFlow;
}

/** Zod schemas of some of the workflows `W`, each parsing to what its workflow takes. */
export type WorkflowInputs<W> = {
  readonly [K in keyof W]?: W[K] extends (ctx: any, input: infer I) => any ? z.ZodType<I> : never;
};

/** When a run undoes its applied effects: see {@link AgentDefinition.compensate}. */
export type CompensateMode = "never" | "on_failure" | "on_failure_or_cancel";

/** The input type of workflow `K` of agent `A`. */
export type WorkflowInput<A, K extends string> =
  A extends AgentDefinition<any, infer W> ? (W[K] extends (ctx: any, input: infer I) => any ? I : never) : unknown;

/** The output type of workflow `K` of agent `A`. */
export type WorkflowOutput<A, K extends string> =
  A extends AgentDefinition<any, infer W>
    ? W[K] extends (ctx: any, input: any) => Promise<infer O>
      ? O
      : never
    : unknown;
