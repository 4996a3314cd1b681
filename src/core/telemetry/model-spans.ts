import type { GenerateRequest, ModelResponse } from "../model-messages.ts";
import type { SpanScope } from "./spans.ts";

/**
 * The OpenTelemetry GenAI semantic conventions on a model call's attempt span: the system and the
 * model asked for as it starts, the model that answered, its finish reason and tokens as it ends.
 */

/** Sets the request's attributes; `provider` is the provider's name (`openai:gpt-5`, `scripted`). */
export function modelCallStarted(scope: SpanScope | undefined, provider: string, request: GenerateRequest): void {
  if (!scope) return;
  const colon = provider.indexOf(":");
  scope.span.setAttributes({
    "gen_ai.operation.name": "chat",
    "gen_ai.system": colon > 0 ? provider.slice(0, colon) : provider,
    "gen_ai.request.model": colon > 0 ? provider.slice(colon + 1) : (request.model ?? provider),
    ...(request.maxOutputTokens !== undefined ? { "gen_ai.request.max_tokens": request.maxOutputTokens } : {}),
  });
}

/** Sets the response's attributes: the model that answered, why it stopped, tokens in and out. */
export function modelCallEnded(scope: SpanScope | undefined, response: ModelResponse, costUsd: number): void {
  if (!scope) return;
  scope.span.setAttributes({
    "gen_ai.response.model": response.model,
    "gen_ai.response.finish_reasons": [response.finishReason],
    "gen_ai.usage.input_tokens": response.usage.inputTokens,
    "gen_ai.usage.output_tokens": response.usage.outputTokens,
    "cairn.model.cost_usd": costUsd,
  });
}
