import type { z } from "zod";
import type { ToolContext, ToolSignature, ToolSignatures, WorkflowContext } from "../core/context.ts";
import type { RetryPolicy } from "../core/retry-policy.ts";

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
}

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
> {
  readonly kind: "agent";
  readonly name: string;
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
  readonly tools: T;
  readonly workflows: W;
}

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
