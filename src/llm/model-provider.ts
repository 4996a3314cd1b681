import type { GenerateRequest, ModelResponse } from "../core/context.ts";

/**
 * A model behind `ctx.llm`. The runtime owns retries, so a provider makes one attempt per call
 * and throws on failure; an error with `retryable: false` (or a non-retryable Cairn error) is
 * not retried.
 */
export interface ModelProvider {
  /** Name recorded on the step (e.g. "scripted", "openai:gpt-5"). */
  readonly name: string;
  generate(request: GenerateRequest, options: { signal: AbortSignal }): Promise<ModelResponse>;
}
