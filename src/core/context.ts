import type { ZodType } from "zod";
import type { AgentLoopOptions, AgentLoopResult } from "./agent-loop.ts";
import type { GenerateRequest, ModelResponse } from "./model-messages.ts";
import type { Actor, Json, ParentClosePolicy, StepKind } from "./records.ts";
import type { RetryPolicy } from "./retry-policy.ts";
import type { SandboxSpec } from "./sandbox.ts";
import type { SandboxHandle } from "./sandbox-handle.ts";

/**
 * The `ctx` a workflow and a tool receive. Interfaces only: the envelope implements them.
 */

/** A tool as the typed `ctx.tool` sees it: argument and result types. */
export interface ToolSignature<Args = unknown, Result = unknown> {
  readonly __args?: Args;
  readonly __result?: Result;
}

/** Map of tool name to its signature. */
export type ToolSignatures = Record<string, ToolSignature<any, any>>;

/** The arguments a tool takes. */
export type ArgsOf<T> = T extends ToolSignature<infer A, any> ? A : never;
/** What a tool resolves to. */
export type ResultOf<T> = T extends ToolSignature<any, infer R> ? R : never;

/** Per-call overrides of `ctx.tool`. */
export interface ToolCallOptions {
  /** Overrides the tool's retry policy for this call. */
  retry?: RetryPolicy;
  /** Overrides the tool's start-to-close timeout (per attempt) for this call. */
  startToCloseTimeoutMs?: number;
}

/** Model calls. In a workflow each call is a checkpointed step; in a tool it is part of the tool's step. */
export interface LlmClient {
  /** Returns the text of the model's answer. */
  generate(request: GenerateRequest): Promise<string>;
  /** Returns the whole response, usage included. */
  chat(request: GenerateRequest): Promise<ModelResponse>;
}

/** What a workflow and a tool can both do. */
export interface BaseContext {
  readonly runId: string;
  readonly agent: string;
  readonly workflow: string;
  /** Reads an entity from a domain provider registered on the runtime. */
  domain<R = unknown>(domain: string, entity: string, params?: Record<string, unknown>): Promise<R>;
  readonly llm: LlmClient;
  /** Writes a line to the runtime's logger with the run id attached; not journaled. */
  log(message: string, fields?: Record<string, unknown>): void;
}

/**
 * The context of a workflow. Every method except `log` is a journaled step; the workflow is
 * replayed after a crash, so it must reach the outside world only through `ctx`.
 *
 * @typeParam T - the agent's tools, so `ctx.tool` names and arguments are checked.
 */
export interface WorkflowContext<T extends ToolSignatures = ToolSignatures> extends BaseContext {
  /** Whether this call is replaying steps recorded by an earlier execution. */
  readonly isReplaying: boolean;
  /** Calls a tool of this agent as a checkpointed step. */
  tool<K extends keyof T & string>(name: K, args: ArgsOf<T[K]>, options?: ToolCallOptions): Promise<ResultOf<T[K]>>;
  /** The time, recorded on first execution and replayed after. */
  now(): Promise<Date>;
  /** A number in [0, 1), recorded on first execution and replayed after. */
  random(): Promise<number>;
  /** A random UUID v4, recorded on first execution and replayed after. */
  uuid(): Promise<string>;
  /**
   * Waits for the signal `name` (sent with `runtime.signal(runId, name, payload)`) and returns its
   * payload. The run is PAUSED (awaiting_signal) meanwhile and holds no compute. A signal sent
   * before the wait is kept in the run's inbox and received at once. With `timeoutMs`, throws
   * `WaitTimeoutError` when none arrives in time.
   */
  waitForSignal<P = Json>(name: string, options?: { timeoutMs?: number }): Promise<P>;
  /**
   * Asks a person a question and returns the answer (`runtime.answer(runId, waitId, value)`),
   * validated against `schema` when given (a bad answer is refused and the run keeps waiting).
   * PAUSED (awaiting_user) meanwhile. With `timeoutMs`, throws `WaitTimeoutError` when unanswered.
   */
  askUser<A = string>(question: string, options?: AskOptions<A>): Promise<A>;
  /** Sleeps durably: PAUSED (awaiting_timer); a timer due while every worker was down fires when one is back. */
  sleep(ms: number): Promise<void>;
  /** Sleeps until `at` (a Date or epoch milliseconds); see {@link WorkflowContext.sleep}. */
  sleepUntil(at: Date | number): Promise<void>;
  /**
   * Asks for an approval and waits for the decision (PAUSED, awaiting_approval). Resolves when
   * approved; throws `ApprovalDeniedError` when denied and `ApprovalExpiredError` when nobody
   * decided within `expiresInMs` — unhandled, either ends the run BLOCKED.
   */
  requestApproval(request: ApprovalRequest): Promise<ApprovalDecision>;
  /**
   * Starts a child run of `workflow` of `agent` (the child's id is `<this run's id>.<seq>`, so a
   * replay finds the same child). `await child.result()` pauses this run (awaiting_child) until
   * the child ends.
   */
  spawn<O = unknown>(agent: string, workflow: string, input: unknown, options?: SpawnOptions): Promise<ChildHandle<O>>;
  /**
   * Runs the model ↔ tools cycle until the model answers without calling a tool: each model call
   * and each tool call is a step of its own, so a crash resumes mid-conversation. Tools are the
   * agent's (their zod schemas become the model's JSON schemas) and those of the MCP servers
   * named in `mcp`. A refused call (unknown tool, bad arguments, a tool that failed, an approval
   * denied) goes back to the model as a tool error; see {@link AgentLoopOptions} for the limits.
   */
  agentLoop(options: AgentLoopOptions): Promise<AgentLoopResult>;
  /**
   * The run's sandbox `name` (labelled `<runId>/<name>`), created on first use and found again by
   * every retry, replay and worker after a crash: a step of kind `sandbox` named `sandbox:<name>`
   * that records its info. Each call of the handle (`exec`, `readFile`, `writeFile`, `snapshot`,
   * `restore`, `release`, `destroy`) is a step of its own; every sandbox of a run is destroyed when
   * the run ends. Needs the runtime's `sandbox` option.
   * @example
   * const box = await ctx.sandbox("build", { network: false });
   * const { exitCode, tail } = await box.exec("npm test", { timeoutMs: 600_000 });
   */
  sandbox(name: string, spec?: SandboxSpec): Promise<SandboxHandle>;
  /**
   * For code changes under runs in flight: true when this run reaches this point with the new
   * code (a run started after the change, or one that had not got this far), false when the run
   * already went past it under the old code. Recorded as a marker step.
   */
  patched(changeId: string): boolean;
  /**
   * Ends this run and starts its successor with `input` (same agent, workflow and key; linked both
   * ways), so a long session keeps its journal small. Never returns.
   */
  continueAsNew(input: unknown): Promise<never>;
}

/** Options of `ctx.askUser`. */
export interface AskOptions<A> {
  /** zod schema the answer must match; stored as JSON Schema with the question. */
  schema?: ZodType<A>;
  /** Throws `WaitTimeoutError` in the workflow when no answer came in this time. */
  timeoutMs?: number;
}

/** What `ctx.requestApproval` asks. */
export interface ApprovalRequest {
  /** What is to be approved, e.g. "send_payment". */
  action: string;
  /** The exact data approved; the decider must present its digest. */
  payload?: unknown;
  /** Who may decide (subjects); anyone when empty or omitted. */
  approvers?: readonly string[];
  /** How long the approval stays open. */
  expiresInMs: number;
}

/** An approval that was granted. */
export interface ApprovalDecision {
  approved: true;
  approvalId: string;
  by: Actor | undefined;
  note: string | undefined;
  at: number;
}

/** Options of `ctx.spawn`. */
export interface SpawnOptions {
  /** What happens to the child when this run ends first. @default "suspend" */
  parentClosePolicy?: ParentClosePolicy;
}

/** A child run started with `ctx.spawn`. */
export interface ChildHandle<O = unknown> {
  readonly runId: string;
  /** Waits for the child to end: its output, or `RunEndedError` when it did not complete. */
  result(): Promise<O>;
}

/** The context of one tool attempt. */
export interface ToolContext extends BaseContext {
  /** `<runId>:<seq>`: names this step. */
  readonly stepId: string;
  readonly seq: number;
  readonly tool: string;
  /** 1 for the first attempt. */
  readonly attempt: number;
  /** The same for every attempt and replay of this step: `<runId>:<seq>`. */
  readonly idempotencyKey: string;
  /** Fired when the attempt times out, misses its heartbeat, or the run is stopped. */
  readonly signal: AbortSignal;
  /** Tells the runtime the tool is alive; `details` are kept for the next attempt. */
  heartbeat(details?: Json): void;
  /** Details of the last heartbeat of an earlier attempt (or this one), if any. */
  readonly lastHeartbeat: Json | undefined;
  /**
   * The secret `name`, resolved now from the runtime's `secrets` provider (the environment by
   * default): never journaled, never exported, and redacted from every error, model request and
   * tool result the run stores. Throws `UnknownNameError` (`UNKNOWN_SECRET`, not retried) when the
   * provider has none. A workflow has no `ctx.secret`: its values are replayed from the journal,
   * so it passes a secret's name to the tool that needs it.
   * @example
   * const key = await ctx.secret("STRIPE_API_KEY");
   * await fetch(url, { headers: { Authorization: `Bearer ${key}` } });
   */
  secret(name: string): Promise<string>;
}

/** A step as a replay divergence message shows it. */
export interface StepIdentity {
  seq: number;
  kind: StepKind;
  name: string;
}
