/**
 * Errors are data: every error Cairn raises is a {@link CairnError} with a stable `code` from a
 * closed union, a `name` per subclass, and a `retryable` flag that belongs to the class (never
 * found by matching a message).
 */

/** Every code a {@link CairnError} can carry. */
export type CairnErrorCode =
  | "ILLEGAL_TRANSITION"
  | "REPLAY_DIVERGENCE"
  | "INVALID_INPUT"
  | "UNKNOWN_AGENT"
  | "UNKNOWN_WORKFLOW"
  | "UNKNOWN_TOOL"
  | "UNKNOWN_DOMAIN"
  | "UNKNOWN_MODEL"
  | "UNKNOWN_MCP_SERVER"
  | "UNKNOWN_SECRET"
  | "INVALID_DEFINITION"
  | "TOOL_FAILED"
  | "STEP_TIMEOUT"
  | "HEARTBEAT_TIMEOUT"
  | "LEASE_LOST"
  | "RUN_NOT_FOUND"
  | "RUN_NOT_RESUMABLE"
  | "RUN_FAILED"
  | "RUN_BLOCKED"
  | "RUN_INTERRUPTED"
  | "RUN_CANCELLED"
  | "RUN_COMPENSATED"
  | "RUN_NEEDS_RECONCILIATION"
  | "WAIT_TIMEOUT"
  | "NOT_SERIALIZABLE"
  | "RUNTIME_CLOSED"
  | "STORAGE"
  | "STORAGE_REJECTED"
  | "WAIT_NOT_FOUND"
  | "WAIT_CLOSED"
  | "RUN_NOT_OPEN"
  | "APPROVAL_DENIED"
  | "APPROVAL_EXPIRED"
  | "APPROVAL_REFUSED"
  | "CANCELLED"
  | "VERSION_MISMATCH"
  | "STEP_LIMIT"
  | "HISTORY_LIMIT"
  | "SIGNAL_INBOX_FULL"
  | "PAYLOAD_TOO_LARGE"
  | "EFFECT_NOT_APPLIED"
  | "EFFECT_REFUSED"
  | "EFFECT_UNRESOLVED"
  | "EFFECT_NOT_FOUND"
  | "COMPENSATION_FAILED"
  | "POLICY_DENIED"
  | "BUDGET_EXCEEDED"
  | "RUN_NOT_COMPLETED"
  | "ALREADY_DECIDED"
  | "MODEL_UNAVAILABLE"
  | "MODEL_REQUEST_REJECTED"
  | "CONTEXT_OVERFLOW"
  | "MAX_TURNS_EXCEEDED"
  | "AGENT_LOOP_STUCK"
  | "MCP_FAILED";

/** Options every Cairn error accepts. */
export interface CairnErrorOptions {
  cause?: unknown;
}

/** The base class of every error Cairn raises. */
export abstract class CairnError extends Error {
  /** Stable machine-readable code; safe to switch on. */
  abstract readonly code: CairnErrorCode;
  /** Whether retrying the same operation can succeed. A property of the class. */
  static readonly retryable: boolean = false;

  constructor(message: string, options: CairnErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
  }

  /** Whether retrying can succeed; read from the class. */
  get retryable(): boolean {
    return (this.constructor as typeof CairnError).retryable;
  }

  /**
   * `instanceof` that holds across copies of Cairn (two versions in one `node_modules`, a bundle
   * beside a library): an error is an instance of a Cairn error class when it is one of this very
   * class or its prototype chain carries the class's marker, `Symbol.for("cairn.error.<Name>")`, as
   * Temporal's `SymbolBasedInstanceOfError` does. A user's subclass keeps the ordinary check.
   */
  static override [Symbol.hasInstance](this: abstract new (...args: never[]) => unknown, instance: unknown): boolean {
    // biome-ignore lint/complexity/noUselessThisAlias: one name for the class `instanceof` names
    // biome-ignore lint/complexity/noThisInStatic: that class may be a subclass
    const Class = this;
    if (Function.prototype[Symbol.hasInstance].call(Class, instance)) return true;
    if (typeof instance !== "object" || instance === null || !Object.hasOwn(Class, CLASS_MARKER)) return false;
    const marker = (Class as unknown as Record<symbol, symbol>)[CLASS_MARKER] as symbol;
    return (instance as Record<symbol, unknown>)[marker] === true;
  }
}

/** Where each Cairn error class keeps the symbol that marks its instances. */
const CLASS_MARKER = Symbol.for("cairn.error.marker");

/** A state change that the transition table does not allow. A bug, never retried. */
export class IllegalTransitionError extends CairnError {
  readonly code = "ILLEGAL_TRANSITION" as const;
  readonly from: string;
  readonly to: string;
  constructor(message: string, pair: { from: string; to: string }, options?: CairnErrorOptions) {
    super(message, options);
    this.from = pair.from;
    this.to = pair.to;
  }
}

/** The code of a replayed workflow called a different step than its history holds. */
export class ReplayDivergenceError extends CairnError {
  readonly code = "REPLAY_DIVERGENCE" as const;
  readonly seq: number;
  constructor(message: string, seq: number, options?: CairnErrorOptions) {
    super(message, options);
    this.seq = seq;
  }
}

/** Input (tool arguments, workflow input) failed its schema. */
export class InvalidInputError extends CairnError {
  readonly code = "INVALID_INPUT" as const;
  /** The validation issues, as the schema library reported them. */
  readonly issues: readonly { path: readonly PropertyKey[]; message: string }[];
  constructor(
    message: string,
    issues: readonly { path: readonly PropertyKey[]; message: string }[] = [],
    options?: CairnErrorOptions,
  ) {
    super(message, options);
    this.issues = issues;
  }
}

/** An agent, workflow, tool, domain, model, MCP server or secret name that is not registered. */
export class UnknownNameError extends CairnError {
  readonly code:
    | "UNKNOWN_AGENT"
    | "UNKNOWN_WORKFLOW"
    | "UNKNOWN_TOOL"
    | "UNKNOWN_DOMAIN"
    | "UNKNOWN_MODEL"
    | "UNKNOWN_MCP_SERVER"
    | "UNKNOWN_SECRET";
  constructor(
    code:
      | "UNKNOWN_AGENT"
      | "UNKNOWN_WORKFLOW"
      | "UNKNOWN_TOOL"
      | "UNKNOWN_DOMAIN"
      | "UNKNOWN_MODEL"
      | "UNKNOWN_MCP_SERVER"
      | "UNKNOWN_SECRET",
    message: string,
    options?: CairnErrorOptions,
  ) {
    super(message, options);
    this.code = code;
  }
}

/** An agent, tool or runtime definition that cannot work as written. */
export class InvalidDefinitionError extends CairnError {
  readonly code = "INVALID_DEFINITION" as const;
}

/** The shape an error takes in the journal, so a replay can throw the same error again. */
export interface SerializedError {
  name: string;
  message: string;
  code?: string;
  retryable?: boolean;
  stack?: string;
  cause?: SerializedError;
  /** Extra fields of a Cairn error (tool name, attempts, ...). */
  data?: Record<string, unknown>;
}

/** A tool that failed for good: its retries were used up or its error was not retryable. */
export class ToolFailedError extends CairnError {
  readonly code = "TOOL_FAILED" as const;
  readonly tool: string;
  readonly attempts: number;
  constructor(message: string, details: { tool: string; attempts: number }, options?: CairnErrorOptions) {
    super(message, options);
    this.tool = details.tool;
    this.attempts = details.attempts;
  }
}

/** One attempt of a step ran past its start-to-close timeout. Retryable. */
export class StepTimeoutError extends CairnError {
  static override readonly retryable = true;
  readonly code = "STEP_TIMEOUT" as const;
}

/** A tool stopped heartbeating for longer than its heartbeat timeout. Retryable. */
export class HeartbeatTimeoutError extends CairnError {
  static override readonly retryable = true;
  readonly code = "HEARTBEAT_TIMEOUT" as const;
}

/**
 * A write carried a lease epoch older than the run's: another worker took the run over. The
 * worker that gets it drops the run; nothing it does afterwards is stored.
 */
export class LeaseLostError extends CairnError {
  readonly code = "LEASE_LOST" as const;
}

/** No run has this id. */
export class RunNotFoundError extends CairnError {
  readonly code = "RUN_NOT_FOUND" as const;
}

/** `resume` was asked of a run that cannot be resumed from its state. */
export class RunNotResumableError extends CairnError {
  readonly code = "RUN_NOT_RESUMABLE" as const;
}

/** A value handed to the journal is not JSON. */
export class NotSerializableError extends CairnError {
  readonly code = "NOT_SERIALIZABLE" as const;
}

/** The runtime was closed or is shutting down. */
export class RuntimeClosedError extends CairnError {
  readonly code = "RUNTIME_CLOSED" as const;
}

/** The storage backend failed in a way that is not about the run (disk, driver, schema). */
export class StorageError extends CairnError {
  static override readonly retryable = true;
  readonly code = "STORAGE" as const;
}

/**
 * The store refused a value it was given (bad data such as a character it cannot hold, or a
 * constraint): writing it again fails the same way, so it is never retried and never taken for a
 * lost worker. A run whose write is refused so ends FAILED with this error; a client call gets it
 * with nothing written. `field` names the column or value when the store said which.
 */
export class StorageRejectedError extends CairnError {
  readonly code = "STORAGE_REJECTED" as const;
  readonly field: string | undefined;
  constructor(message: string, details: { field?: string | undefined } = {}, options?: CairnErrorOptions) {
    super(message, options);
    this.field = details.field;
  }
}

/** A `waitFor` deadline passed before the run reached a terminal state. */
export class WaitTimeoutError extends CairnError {
  static override readonly retryable = true;
  readonly code = "WAIT_TIMEOUT" as const;
}

/** No wait (question, approval, timer …) with this id in the run. */
export class WaitNotFoundError extends CairnError {
  readonly code = "WAIT_NOT_FOUND" as const;
}

/** The wait was resolved or closed already: an answer or a decision comes once. */
export class WaitClosedError extends CairnError {
  readonly code = "WAIT_CLOSED" as const;
}

/** The run is in a terminal state and takes no more signals, answers or decisions. */
export class RunNotOpenError extends CairnError {
  readonly code = "RUN_NOT_OPEN" as const;
}

/** Thrown in the workflow when an approval it asked for was denied. Unhandled, the run ends BLOCKED. */
export class ApprovalDeniedError extends CairnError {
  readonly code = "APPROVAL_DENIED" as const;
  readonly approvalId: string;
  readonly by: string | undefined;
  constructor(message: string, details: { approvalId: string; by?: string | undefined }, options?: CairnErrorOptions) {
    super(message, options);
    this.approvalId = details.approvalId;
    this.by = details.by;
  }
}

/** Thrown in the workflow when an approval it asked for expired undecided. Unhandled, the run ends BLOCKED. */
export class ApprovalExpiredError extends CairnError {
  readonly code = "APPROVAL_EXPIRED" as const;
  readonly approvalId: string;
  constructor(message: string, details: { approvalId: string }, options?: CairnErrorOptions) {
    super(message, options);
    this.approvalId = details.approvalId;
  }
}

/**
 * An approve or deny was refused: `why` says which rule — the digest is not the one of the
 * payload (`wrong_digest`), the decider is not one of the approvers (`not_an_approver`), the
 * approval expired (`expired`), or no decider was named (`no_decider`).
 */
export class ApprovalRefusedError extends CairnError {
  readonly code = "APPROVAL_REFUSED" as const;
  readonly why: "wrong_digest" | "not_an_approver" | "expired" | "no_decider";
  constructor(message: string, why: ApprovalRefusedError["why"], options?: CairnErrorOptions) {
    super(message, options);
    this.why = why;
  }
}

/** The run was cancelled: what a tool's `AbortSignal` carries, and the error of a CANCELLED run. */
export class CancelledError extends CairnError {
  readonly code = "CANCELLED" as const;
}

/**
 * The run was started on a workflow version that the deployed code does not accept. The run is
 * FAILED and can be resumed once code that accepts the version is deployed.
 */
export class VersionMismatchError extends CairnError {
  readonly code = "VERSION_MISMATCH" as const;
}

/** The run reached its maximum number of steps; `ctx.continueAsNew` keeps long sessions small. */
export class StepLimitError extends CairnError {
  readonly code = "STEP_LIMIT" as const;
}

/**
 * The run's history reached one of its limits (`maxHistoryBytes`, `maxHistoryEvents`): the step
 * that would take it further is refused. Never retried: the history only grows; carry the state
 * over with `ctx.continueAsNew(state)` to go on in a fresh run.
 */
export class HistoryLimitError extends CairnError {
  readonly code = "HISTORY_LIMIT" as const;
  /** What is counted: `bytes` of JSON (`maxHistoryBytes`) or `events` (`maxHistoryEvents`). */
  readonly measure: "bytes" | "events";
  /** What the history holds, or would hold with the refused step. */
  readonly figure: number;
  readonly limit: number;
  constructor(
    message: string,
    details: { measure: "bytes" | "events"; figure: number; limit: number },
    options?: CairnErrorOptions,
  ) {
    super(message, options);
    this.measure = details.measure;
    this.figure = details.figure;
    this.limit = details.limit;
  }
}

/**
 * A signal was refused because the run's inbox holds `maxUnreadSignals` signals it has not read
 * (no wait of theirs came yet): nothing was stored. Not retryable as such: it succeeds only once
 * the run reads its inbox (a wait for one of those names) or the sender sends what a wait awaits.
 */
export class SignalInboxFullError extends CairnError {
  readonly code = "SIGNAL_INBOX_FULL" as const;
  /** Unread signals in the inbox. */
  readonly unread: number;
  readonly limit: number;
  constructor(message: string, details: { unread: number; limit: number }, options?: CairnErrorOptions) {
    super(message, options);
    this.unread = details.unread;
    this.limit = details.limit;
  }
}

/**
 * A payload (a step's arguments or result, a run's input or output, a signal, an answer …) is
 * larger than the journal takes (`maxPayloadBytes`). Never retried: it would be as large again.
 */
export class PayloadTooLargeError extends CairnError {
  readonly code = "PAYLOAD_TOO_LARGE" as const;
  /** Bytes of JSON text (UTF-8) the payload took. */
  readonly bytes: number;
  /** The limit it went over. */
  readonly limit: number;
  constructor(message: string, details: { bytes: number; limit: number }, options?: CairnErrorOptions) {
    super(message, options);
    this.bytes = details.bytes;
    this.limit = details.limit;
  }
}

/**
 * Thrown by an effect tool to say that its effect definitely did not happen (the service
 * answered that it refused, or the request never left): the attempt is retried under the
 * tool's policy with the same idempotency key. Any other error leaves the outcome unknown, and
 * the tool's `status` query (or an operator) settles it.
 */
export class EffectNotAppliedError extends CairnError {
  readonly code: "EFFECT_NOT_APPLIED" | "EFFECT_REFUSED" = "EFFECT_NOT_APPLIED";
  static override readonly retryable: boolean = true;
}

/**
 * The effect definitely did not happen and never will on a retry (an account without the funds, a
 * closed account): the step fails at once. The run's compensations, if asked for, undo what came before.
 */
export class EffectRefusedError extends EffectNotAppliedError {
  override readonly code = "EFFECT_REFUSED" as const;
  static override readonly retryable: boolean = false;
}

/**
 * An effect's outcome is unknown (its attempt ended without one and no status query could
 * settle it): the run is NEEDS_RECONCILIATION until an operator calls `reconcile`. The run's
 * error while it waits, naming the effect.
 */
export class EffectUnresolvedError extends CairnError {
  readonly code = "EFFECT_UNRESOLVED" as const;
  readonly effectId: string;
  constructor(message: string, details: { effectId: string }, options?: CairnErrorOptions) {
    super(message, options);
    this.effectId = details.effectId;
  }
}

/** `reconcile` named an effect the run does not have, or one whose outcome is known. */
export class EffectNotFoundError extends CairnError {
  readonly code = "EFFECT_NOT_FOUND" as const;
}

/** A compensation could not undo an applied effect: the run ends FAILED naming what is left. */
export class CompensationFailedError extends CairnError {
  readonly code = "COMPENSATION_FAILED" as const;
}

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

/** `accept` / `reject` need a COMPLETED run. */
export class RunNotCompletedError extends CairnError {
  readonly code = "RUN_NOT_COMPLETED" as const;
}

/** The run already has an acceptance verdict; it is given once. */
export class AlreadyDecidedError extends CairnError {
  readonly code = "ALREADY_DECIDED" as const;
}

/** Thrown by `RunHandle.result()` when the run did not complete; `code` tells which ending. */
export class RunEndedError extends CairnError {
  readonly code:
    | "RUN_FAILED"
    | "RUN_BLOCKED"
    | "RUN_INTERRUPTED"
    | "RUN_CANCELLED"
    | "RUN_COMPENSATED"
    | "RUN_NEEDS_RECONCILIATION";
  readonly runId: string;
  readonly state: string;
  /** The run's own error, as stored. */
  readonly error: SerializedError | undefined;
  constructor(
    details: {
      runId: string;
      state: "FAILED" | "BLOCKED" | "INTERRUPTED" | "CANCELLED" | "COMPENSATED" | "NEEDS_RECONCILIATION";
      error?: SerializedError | undefined;
    },
    options?: CairnErrorOptions,
  ) {
    const why = details.error
      ? `: ${details.error.code ? `[${details.error.code}] ` : ""}${details.error.message}`
      : "";
    super(`run ${details.runId} ended ${details.state}${why}`, options);
    this.code = `RUN_${details.state}` as RunEndedError["code"];
    this.runId = details.runId;
    this.state = details.state;
    this.error = details.error;
  }
}

/** What a model provider's failed request carries: the HTTP status and the provider's own words. */
export interface ModelErrorDetails {
  /** The provider (e.g. "openai.chat", "anthropic.messages"). */
  provider: string;
  /** HTTP status, when the provider answered with one. */
  status?: number | undefined;
  /** How long the provider asked us to wait before retrying (`Retry-After`), in milliseconds. */
  retryAfterMs?: number | undefined;
}

/**
 * A model call failed in a way a retry can mend: 408, 409, 429, 5xx (Anthropic's 529 too), a
 * dropped connection, or a stream that broke after its success status. The runtime retries it
 * with backoff, waiting at least `retryAfterMs` when the provider said so.
 */
export class ModelUnavailableError extends CairnError {
  static override readonly retryable = true;
  readonly code = "MODEL_UNAVAILABLE" as const;
  readonly provider: string;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  constructor(message: string, details: ModelErrorDetails, options?: CairnErrorOptions) {
    super(message, options);
    this.provider = details.provider;
    this.status = details.status;
    this.retryAfterMs = details.retryAfterMs;
  }
}

/** The provider refused the request (400, 401, 403, 404, 422, ...): the same request fails again. */
export class ModelRequestError extends CairnError {
  readonly code: "MODEL_REQUEST_REJECTED" | "CONTEXT_OVERFLOW" = "MODEL_REQUEST_REJECTED";
  readonly provider: string;
  readonly status: number | undefined;
  constructor(message: string, details: ModelErrorDetails, options?: CairnErrorOptions) {
    super(message, options);
    this.provider = details.provider;
    this.status = details.status;
  }
}

/**
 * The request is larger than the model's context window. Not retried: shorten the conversation
 * (`ctx.agentLoop` compacts it before this happens) or use a model with a larger window.
 */
export class ContextOverflowError extends ModelRequestError {
  override readonly code = "CONTEXT_OVERFLOW" as const;
}

/** `ctx.agentLoop` reached `maxTurns` model calls without a final answer. */
export class MaxTurnsExceededError extends CairnError {
  readonly code = "MAX_TURNS_EXCEEDED" as const;
}

/** `ctx.agentLoop` saw the model make the same failing tool call again and again. */
export class AgentLoopStuckError extends CairnError {
  readonly code = "AGENT_LOOP_STUCK" as const;
}

/**
 * An MCP server could not be started or reached, or broke the protocol. Retryable: the server
 * may be back on the next attempt (a tool the server ran and reported failed is a tool error).
 */
export class McpError extends CairnError {
  static override readonly retryable = true;
  readonly code = "MCP_FAILED" as const;
}

/**
 * Marks an error thrown by a tool as not worth retrying whatever the tool's policy says.
 * @example
 * throw new NonRetryableError("account is closed");
 */
export class NonRetryableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NonRetryableError";
  }
}

/**
 * Marks every Cairn error class (its name written out, so a minifier cannot change it): its
 * prototype carries `Symbol.for("cairn.error.<Name>")` for `instanceof` across copies of Cairn.
 */
for (const [name, Class] of Object.entries({
  CairnError,
  IllegalTransitionError,
  ReplayDivergenceError,
  InvalidInputError,
  UnknownNameError,
  InvalidDefinitionError,
  ToolFailedError,
  StepTimeoutError,
  HeartbeatTimeoutError,
  LeaseLostError,
  RunNotFoundError,
  RunNotResumableError,
  NotSerializableError,
  RuntimeClosedError,
  StorageError,
  StorageRejectedError,
  WaitTimeoutError,
  WaitNotFoundError,
  WaitClosedError,
  RunNotOpenError,
  ApprovalDeniedError,
  ApprovalExpiredError,
  ApprovalRefusedError,
  CancelledError,
  VersionMismatchError,
  StepLimitError,
  HistoryLimitError,
  SignalInboxFullError,
  PayloadTooLargeError,
  EffectNotAppliedError,
  EffectRefusedError,
  EffectUnresolvedError,
  EffectNotFoundError,
  CompensationFailedError,
  PolicyDeniedError,
  BudgetExceededError,
  RunNotCompletedError,
  AlreadyDecidedError,
  RunEndedError,
  ModelUnavailableError,
  ModelRequestError,
  ContextOverflowError,
  MaxTurnsExceededError,
  AgentLoopStuckError,
  McpError,
})) {
  const marker = Symbol.for(`cairn.error.${name}`);
  Object.defineProperty(Class, CLASS_MARKER, { value: marker });
  Object.defineProperty(Class.prototype, marker, { value: true });
}
