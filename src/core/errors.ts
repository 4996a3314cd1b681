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
  | "WAIT_TIMEOUT"
  | "NOT_SERIALIZABLE"
  | "RUNTIME_CLOSED"
  | "STORAGE";

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
}

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

/** An agent, workflow, tool, domain or model name that is not registered. */
export class UnknownNameError extends CairnError {
  readonly code: "UNKNOWN_AGENT" | "UNKNOWN_WORKFLOW" | "UNKNOWN_TOOL" | "UNKNOWN_DOMAIN" | "UNKNOWN_MODEL";
  constructor(
    code: "UNKNOWN_AGENT" | "UNKNOWN_WORKFLOW" | "UNKNOWN_TOOL" | "UNKNOWN_DOMAIN" | "UNKNOWN_MODEL",
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

/** A `waitFor` deadline passed before the run reached a terminal state. */
export class WaitTimeoutError extends CairnError {
  static override readonly retryable = true;
  readonly code = "WAIT_TIMEOUT" as const;
}

/** Thrown by `RunHandle.result()` when the run did not complete; `code` tells which ending. */
export class RunEndedError extends CairnError {
  readonly code: "RUN_FAILED" | "RUN_BLOCKED" | "RUN_INTERRUPTED" | "RUN_CANCELLED" | "RUN_COMPENSATED";
  readonly runId: string;
  readonly state: string;
  /** The run's own error, as stored. */
  readonly error: SerializedError | undefined;
  constructor(
    details: {
      runId: string;
      state: "FAILED" | "BLOCKED" | "INTERRUPTED" | "CANCELLED" | "COMPENSATED";
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
