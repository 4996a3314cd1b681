import type { GenerateRequest, ModelResponse } from "../../model-messages.ts";
import type { EnvelopeState } from "../envelope-state.ts";
import { governedCall } from "../governed-call.ts";
import { runStep } from "../journaled-step.ts";
import { modelAttempt } from "./model-attempt.ts";

/**
 * `ctx.llm.generate` / `ctx.llm.chat`: a model call as an `llm` step, governed like any call. It is
 * named by the model key the code asked for, not by the provider behind it, so swapping the
 * provider under runs in flight does not make their recorded calls diverge.
 */
export function llmCall(x: EnvelopeState, request: GenerateRequest): Promise<ModelResponse> {
  const name = request.model ?? "default";
  if (request.maxOutputTokens !== undefined && !x.cursor.next()) {
    // Refused before it is made when its declared maximum output could overshoot the cost budget.
    try {
      x.governance.admitModelCall(providerName(x, request.model), request.maxOutputTokens, x.host.now());
    } catch (error) {
      return Promise.reject(error);
    }
  }
  return governedCall(x, "llm", "llm", name, request, undefined, (begun) =>
    runStep<ModelResponse>(
      x,
      "llm",
      name,
      request,
      {
        policy: x.host.modelRetry,
        startToCloseTimeoutMs: request.timeoutMs ?? x.host.modelTimeoutMs ?? providerTimeout(x, request.model),
        heartbeatTimeoutMs: undefined,
        run: (attempt) =>
          modelAttempt({
            provider: x.host.model(request.model),
            request,
            attempt,
            emit: x.host.emit,
            lastErrors: x.modelErrors,
            cost: (model, usage) => x.governance.governor.cost(model, usage),
          }),
        effect: undefined,
        rateLimit: x.host.rateLimits?.ofModel(request.model),
      },
      begun,
    ),
  );
}

/** The name of the provider behind model `name`; undefined when the model is unknown. */
function providerName(x: EnvelopeState, name: string | undefined): string | undefined {
  try {
    return x.host.model(name).name;
  } catch {
    return undefined;
  }
}

/** The provider's own per-attempt timeout; none when the model is unknown (the attempt says so). */
function providerTimeout(x: EnvelopeState, name: string | undefined): number | undefined {
  try {
    return x.host.model(name).timeoutMs;
  } catch {
    return undefined;
  }
}
