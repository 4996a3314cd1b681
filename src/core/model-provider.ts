import type { GenerateRequest, ModelResponse } from "./model-messages.ts";
import type { RateLimitDeclaration } from "./rate-limits.ts";

/** What the runtime hands a provider with each attempt of a model call. */
export interface ModelCallOptions {
  /** Fires when the attempt times out or the run stops; the provider aborts its request. */
  signal: AbortSignal;
  /**
   * Called with each piece of text as it streams in (not journaled: it feeds the run's event
   * stream). A provider that does not stream never calls it.
   */
  onText?: (delta: string) => void;
}

/**
 * A model behind `ctx.llm` and `ctx.agentLoop`. The runtime owns retries, so a provider makes one
 * attempt per call and throws on failure: a `CairnError` says by its class whether a retry can
 * succeed (`ModelUnavailableError` retryable, `ModelRequestError` and `ContextOverflowError`
 * not); any other error with `retryable: false` is not retried either.
 */
export interface ModelProvider {
  /** Name recorded on the step (e.g. "scripted", "openai:gpt-5"). */
  readonly name: string;
  /**
   * Per-attempt timeout of its calls that set none, unless the runtime's `modelTimeoutMs` says
   * otherwise. A provider that reaches the network sets one (`AiSdkModel`: 5 minutes); one that
   * answers in-process (the scripted model) needs none.
   */
  readonly timeoutMs?: number | undefined;
  /**
   * A rate limit on its calls, shared by every worker on the backend: the name of one of the
   * runtime's `rateLimits` (`"openai"`), or a limit of its own (`{ limit: 500, per: "1m" }`, kept
   * under `model:<name>`). Each attempt of a model step takes a slot just before it calls; a 429
   * with Retry-After holds the limit for every worker (see `ToolOptions.rateLimit`).
   * @default no limit
   */
  readonly rateLimit?: RateLimitDeclaration | undefined;
  generate(request: GenerateRequest, options: ModelCallOptions): Promise<ModelResponse>;
}
