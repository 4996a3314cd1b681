import type { LanguageModelV3FinishReason, LanguageModelV3StreamPart, LanguageModelV3Usage } from "@ai-sdk/provider";
import type { AiSdkLanguageModelV2, AiSdkPart } from "./ai-sdk-spec.ts";
import { mapParts, SHARED_STREAM_PARTS, textAndToolCalls, type V3View } from "./ai-sdk-v3.ts";

/**
 * A `LanguageModelV2` (`@ai-sdk/provider` 2.x, the interface of AI SDK 5) as the v3 model path
 * reads it. The call options go through as they are: the prompt, tools, tool choice and settings
 * cairn sends have the same shape in v2. What differs comes back:
 * - the finish reason is a plain string; `"unknown"` ("the model has not transmitted a finish
 *   reason") becomes v3's `{ unified: "other", raw: undefined }`, the sign of a stream cut short;
 * - usage counts are plain numbers (`inputTokens`, `outputTokens`, `cachedInputTokens`,
 *   `reasoningTokens`), broken down here as v3 does;
 * - text, tool calls, response metadata and errors already have their v3 shape; the parts the
 *   model path does not read (reasoning, sources, files, tool input deltas) are dropped.
 */
export function fromV2(model: AiSdkLanguageModelV2): V3View {
  return {
    provider: model.provider,
    modelId: model.modelId,
    async doGenerate(call) {
      const result = await model.doGenerate(call);
      return {
        content: textAndToolCalls(result.content),
        finishReason: finishReason(result.finishReason),
        usage: usage(result.usage),
        response: result.response,
      };
    },
    async doStream(call) {
      const { stream } = await model.doStream(call);
      return { stream: mapParts(stream, streamPart) };
    },
  };
}

/** Token counts as v2 reports them. */
interface V2Usage {
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  reasoningTokens?: number | undefined;
  cachedInputTokens?: number | undefined;
}

/** v2's `finish` stream part. */
interface V2Finish {
  type: "finish";
  finishReason: string;
  usage: V2Usage;
}

const UNIFIED = new Set(["stop", "length", "content-filter", "tool-calls", "error", "other"]);

/** A v2 finish reason in its v3 form. */
export function finishReason(reason: string): LanguageModelV3FinishReason {
  if (UNIFIED.has(reason)) return { unified: reason as LanguageModelV3FinishReason["unified"], raw: reason };
  // "unknown": no finish reason came, the answer may be cut short.
  return { unified: "other", raw: undefined };
}

/** v2 token counts in their v3 form. */
export function usage(counts: V2Usage): LanguageModelV3Usage {
  const { inputTokens, outputTokens, reasoningTokens, cachedInputTokens } = counts;
  const minus = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined ? a - b : a);
  return {
    inputTokens: {
      total: inputTokens,
      noCache: minus(inputTokens, cachedInputTokens),
      cacheRead: cachedInputTokens,
      cacheWrite: undefined,
    },
    outputTokens: { total: outputTokens, text: minus(outputTokens, reasoningTokens), reasoning: reasoningTokens },
  };
}

/** A v2 stream part in its v3 form, or undefined when the model path does not read it. */
function streamPart(part: AiSdkPart): LanguageModelV3StreamPart | undefined {
  if (part.type === "finish") {
    const finish = part as V2Finish;
    return { type: "finish", finishReason: finishReason(finish.finishReason), usage: usage(finish.usage) };
  }
  return SHARED_STREAM_PARTS.has(part.type) ? (part as LanguageModelV3StreamPart) : undefined;
}
