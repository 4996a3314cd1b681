import type { LanguageModelV3FinishReason, LanguageModelV3StreamPart, LanguageModelV3Usage } from "@ai-sdk/provider";
import type { AiSdkLanguageModelV4, AiSdkPart } from "./ai-sdk-spec.ts";
import { mapParts, SHARED_STREAM_PARTS, textAndToolCalls, type V3View } from "./ai-sdk-v3.ts";

/**
 * A `LanguageModelV4` (`@ai-sdk/provider` 4.x, the interface of AI SDK 7; its packages need Node
 * 22+ and are ES modules only) as the v3 model path reads it. The call options go through as they
 * are (cairn sends nothing v4 changed), and answers are v3's but for:
 * - the finish reason `"interrupted"` ("the provider stream ended without a completion signal"),
 *   which becomes v3's `{ unified: "other", raw: undefined }`, the sign of a stream cut short, so
 *   that attempt fails and is retried rather than kept as a truncated answer;
 * - stream parts v3 has not (`ping`, custom content, reasoning files), which are dropped with the
 *   other parts the model path does not read.
 */
export function fromV4(model: AiSdkLanguageModelV4): V3View {
  return {
    provider: model.provider,
    modelId: model.modelId,
    async doGenerate(call) {
      const result = await model.doGenerate(call);
      return {
        content: textAndToolCalls(result.content),
        finishReason: finishReason(result.finishReason),
        usage: result.usage as LanguageModelV3Usage,
        response: result.response,
      };
    },
    async doStream(call) {
      const { stream } = await model.doStream(call);
      return { stream: mapParts(stream, streamPart) };
    },
  };
}

/** v4's `finish` stream part; its usage has v3's shape. */
interface V4Finish {
  type: "finish";
  finishReason: { unified: string; raw: string | undefined };
  usage: LanguageModelV3Usage;
}

/** A v4 finish reason in its v3 form. */
export function finishReason(reason: { unified: string; raw: string | undefined }): LanguageModelV3FinishReason {
  if (reason.unified === "interrupted") return { unified: "other", raw: undefined };
  return reason as LanguageModelV3FinishReason;
}

/** A v4 stream part in its v3 form, or undefined when the model path does not read it. */
function streamPart(part: AiSdkPart): LanguageModelV3StreamPart | undefined {
  if (part.type === "finish") {
    const finish = part as V4Finish;
    return { type: "finish", finishReason: finishReason(finish.finishReason), usage: finish.usage };
  }
  return SHARED_STREAM_PARTS.has(part.type) ? (part as LanguageModelV3StreamPart) : undefined;
}
