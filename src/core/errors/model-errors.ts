import { CairnError, type CairnErrorOptions, markErrorClasses } from "./cairn-error.ts";

/* Model calls, the agent loop and MCP servers. */

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

markErrorClasses({
  ModelUnavailableError,
  ModelRequestError,
  ContextOverflowError,
  MaxTurnsExceededError,
  AgentLoopStuckError,
  McpError,
});
