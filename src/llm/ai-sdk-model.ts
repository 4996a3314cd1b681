import type {
  LanguageModelV3FinishReason,
  LanguageModelV3StreamPart,
  LanguageModelV3ToolCall,
  LanguageModelV3Usage,
} from "@ai-sdk/provider";
import { ModelRequestError, ModelUnavailableError } from "../core/errors.ts";
import type { GenerateRequest, ModelResponse, ModelToolCall } from "../core/model-messages.ts";
import type { ModelCallOptions, ModelProvider } from "../core/model-provider.ts";
import type { RateLimitDeclaration } from "../core/rate-limits.ts";
import type { Json } from "../core/records.ts";
import { callOptions } from "./ai-sdk-prompt.ts";
import type { AiSdkCallOptions, AiSdkLanguageModel } from "./ai-sdk-spec.ts";
import type { V3View } from "./ai-sdk-v3.ts";
import { adaptModel } from "./ai-sdk-versions.ts";
import { describe, modelError } from "./model-errors.ts";

/** Options of {@link AiSdkModel}. */
export interface AiSdkModelOptions {
  /** Name recorded on steps. @default `${model.provider}:${model.modelId}`, e.g. "openai.chat:gpt-4o-mini" */
  name?: string | undefined;
  /**
   * Stream the answer (`doStream`), so its text reaches the run's event stream as it comes;
   * `false` makes one `doGenerate` request. @default true
   */
  stream?: boolean | undefined;
  /** Per-attempt timeout of a call that sets none (the runtime's `modelTimeoutMs` wins). @default 300000 */
  timeoutMs?: number | undefined;
  /**
   * A rate limit on its calls, shared by every worker: a name of the runtime's `rateLimits`, or
   * `{ limit, per }` of its own (see `ModelProvider.rateLimit`). @default no limit
   */
  rateLimit?: RateLimitDeclaration | undefined;
}

/**
 * A {@link ModelProvider} over any AI SDK language model (`@ai-sdk/openai`, `@ai-sdk/anthropic`,
 * …), so `ctx.llm` can call real models. The model may implement the provider interface v2 (AI
 * SDK 5), v3 (AI SDK 6) or v4 (AI SDK 7), told apart by its `specificationVersion`; see
 * {@link AiSdkLanguageModel}.
 *
 * One `generate` is one HTTP request: AI SDK models do not retry (retries live in the SDK's
 * `generateText`, which this does not use), and the runtime owns retries, so a failure is thrown
 * at once as an error whose class says whether a retry can mend it (see {@link modelError}). A
 * stream that breaks or ends before the model said it finished is a failed attempt
 * (`ModelUnavailableError`), never a truncated answer. When the runtime's signal fires (timeout,
 * stop) the request is aborted and the signal's reason is thrown as it is.
 *
 * @example
 * import { createOpenAI } from "@ai-sdk/openai";
 * new AiSdkModel(createOpenAI({ apiKey }).chat("gpt-4o-mini"))
 * @throws InvalidDefinitionError when the model implements another provider interface (e.g. AI
 *   SDK 4's `LanguageModelV1`).
 */
export class AiSdkModel implements ModelProvider {
  readonly name: string;
  /** The AI SDK model behind this provider, as it was given. */
  readonly model: AiSdkLanguageModel;
  /** The model as the v3 path reads it (its version's adapter). */
  readonly #model: V3View;
  readonly #stream: boolean;
  readonly timeoutMs: number;
  readonly rateLimit: RateLimitDeclaration | undefined;

  constructor(model: AiSdkLanguageModel, options: AiSdkModelOptions = {}) {
    this.#model = adaptModel(model);
    this.model = model;
    this.name = options.name ?? `${model.provider}:${model.modelId}`;
    this.#stream = options.stream ?? true;
    this.timeoutMs = options.timeoutMs ?? 300_000;
    this.rateLimit = options.rateLimit;
  }

  async generate(request: GenerateRequest, options: ModelCallOptions): Promise<ModelResponse> {
    const { signal } = options;
    if (signal.aborted) throw signal.reason;
    if (request.prompt === undefined && !request.messages?.some((m) => m.role !== "system")) {
      throw new ModelRequestError(`${this.name}: a model request needs a prompt or messages`, {
        provider: this.model.provider,
      });
    }
    try {
      const call = callOptions(request, signal);
      return this.#stream ? await this.#streamed(call, options.onText) : await this.#generated(call);
    } catch (error) {
      // A timeout or a stop: the runtime's own error, not the fetch's AbortError.
      if (signal.aborted) throw signal.reason;
      throw modelError(error, this.model.provider);
    }
  }

  async #generated(call: AiSdkCallOptions): Promise<ModelResponse> {
    const result = await this.#model.doGenerate(call);
    let text = "";
    const toolCalls: ModelToolCall[] = [];
    for (const part of result.content) {
      if (part.type === "text") text += part.text;
      else if (part.type === "tool-call" && !part.providerExecuted) toolCalls.push(toolCall(part));
    }
    return this.#response(text, toolCalls, result.finishReason, result.usage, result.response?.modelId);
  }

  async #streamed(call: AiSdkCallOptions, onText: ((delta: string) => void) | undefined): Promise<ModelResponse> {
    const provider = this.model.provider;
    const { stream } = await this.#model.doStream(call);
    const reader = stream.getReader();
    let text = "";
    const toolCalls: ModelToolCall[] = [];
    let modelId: string | undefined;
    let finish: Extract<LanguageModelV3StreamPart, { type: "finish" }> | undefined;
    try {
      for (;;) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (error) {
          // The connection broke after the success status: nothing usable came, try again.
          if (call.abortSignal?.aborted) throw error;
          throw new ModelUnavailableError(
            `${provider} stream broke after ${text.length} characters: ${describe(error)}`,
            { provider },
            { cause: error },
          );
        }
        if (next.done) break;
        const part = next.value;
        switch (part.type) {
          case "text-delta":
            text += part.delta;
            if (onText && part.delta !== "") emit(onText, part.delta);
            break;
          case "tool-call":
            if (!part.providerExecuted) toolCalls.push(toolCall(part));
            break;
          case "response-metadata":
            modelId = part.modelId ?? modelId;
            break;
          case "finish":
            finish = part;
            break;
          case "error":
            throw new ModelUnavailableError(
              `${provider} stream reported an error after ${text.length} characters: ${describe(part.error)}`,
              { provider },
              { cause: part.error },
            );
        }
      }
    } catch (error) {
      reader.cancel().catch(() => {});
      throw error;
    } finally {
      reader.releaseLock();
    }
    // Anthropic sends its finish part only on `message_stop`; OpenAI's chat model always sends one
    // but without a raw reason when no `finish_reason` came. Either way the answer is cut short.
    if (!finish || (finish.finishReason.raw === undefined && finish.finishReason.unified === "other")) {
      throw new ModelUnavailableError(
        `${provider} stream ended after ${text.length} characters before the model said it had finished`,
        { provider },
      );
    }
    return this.#response(text, toolCalls, finish.finishReason, finish.usage, modelId);
  }

  #response(
    text: string,
    toolCalls: ModelToolCall[],
    finishReason: LanguageModelV3FinishReason,
    usage: LanguageModelV3Usage,
    modelId: string | undefined,
  ): ModelResponse {
    return {
      text,
      finishReason: finishReason.unified,
      usage: { inputTokens: usage.inputTokens.total ?? 0, outputTokens: usage.outputTokens.total ?? 0 },
      // Bare model id ("gpt-4o-mini-2024-07-18"): the price table is looked up by it.
      model: modelId || this.model.modelId,
      ...(toolCalls.length > 0 && { toolCalls }),
    };
  }
}

/** Calls a text listener; one that throws does not fail the model call (the text is not journaled). */
function emit(onText: (delta: string) => void, delta: string): void {
  try {
    onText(delta);
  } catch {
    // The listener's problem, not the model's.
  }
}

/** A tool call as the model wrote it: its arguments parsed, kept as the raw string when not JSON. */
function toolCall(part: LanguageModelV3ToolCall): ModelToolCall {
  let args: Json;
  try {
    args = part.input.trim() === "" ? {} : (JSON.parse(part.input) as Json);
  } catch {
    args = part.input;
  }
  return { id: part.toolCallId, name: part.toolName, args };
}
