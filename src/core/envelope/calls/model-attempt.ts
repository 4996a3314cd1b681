import type { RunEventBody } from "../../events.ts";
import type { GenerateRequest, ModelResponse } from "../../model-messages.ts";
import type { ModelProvider } from "../../model-provider.ts";
import { redactText } from "../../redact.ts";
import { modelUsed } from "../../telemetry/metrics.ts";
import { modelCallEnded, modelCallStarted } from "../../telemetry/model-spans.ts";
import type { StepExecution } from "../step-attempt.ts";

/**
 * One attempt of a model call (an `llm` step): the provider's text goes to the run's live events
 * as it streams, framed by `model.start` / `model.end`, with a `model.retry` first when an earlier
 * attempt of the step failed; the usage and its cost go on the step.
 */
export async function modelAttempt(options: {
  provider: ModelProvider;
  request: GenerateRequest;
  attempt: StepExecution;
  emit: (event: RunEventBody) => void;
  /** The error of each step's last failed attempt, read by the retry event of the next one. */
  lastErrors: Map<number, string>;
  cost: (model: string, usage: ModelResponse["usage"]) => number;
}): Promise<ModelResponse> {
  const { provider, request, attempt, emit, lastErrors } = options;
  const { seq, attempt: n } = attempt;
  if (n > 1) emit({ type: "model.retry", seq, attempt: n, error: lastErrors.get(seq) ?? "the attempt was cut off" });
  emit({ type: "model.start", seq, attempt: n, model: provider.name });
  modelCallStarted(attempt.trace, provider.name, request);
  try {
    const response = await provider.generate(request, {
      signal: attempt.signal,
      onText: (text) => {
        if (text && !attempt.signal.aborted) emit({ type: "model.text", seq, attempt: n, text });
      },
    });
    const costUsd = options.cost(response.model, response.usage);
    attempt.addUsage({ ...response.usage, costUsd });
    modelCallEnded(attempt.trace, response, costUsd);
    modelUsed(response.model, response.usage, costUsd);
    lastErrors.delete(seq);
    emit({ type: "model.end", seq, attempt: n, status: "completed" });
    return response;
  } catch (error) {
    // A timeout or a stop says why in the signal; the provider's own error may only say "aborted".
    const why = attempt.signal.aborted ? attempt.signal.reason : error;
    // Live events are served to every viewer of the run: no credentials there either.
    const message = redactText(String((why as Error)?.message ?? why));
    lastErrors.set(seq, message);
    emit({ type: "model.end", seq, attempt: n, status: "failed", error: message });
    throw error;
  }
}
