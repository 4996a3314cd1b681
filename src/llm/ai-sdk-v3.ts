import type {
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage,
} from "@ai-sdk/provider";
import type { AiSdkCallOptions, AiSdkLanguageModelV3, AiSdkPart } from "./ai-sdk-spec.ts";

/**
 * The model path of `AiSdkModel` is written against the v3 provider interface (AI SDK 6). A model
 * of another version reaches it through its adapter (ai-sdk-v2.ts, ai-sdk-v4.ts), which hands on
 * the call options as they are (cairn sends the same shape to every version) and turns answers
 * and stream parts into their v3 form.
 */

/** An answer in the v3 form: only what the model path reads. */
export interface V3Answer {
  content: LanguageModelV3Content[];
  finishReason: LanguageModelV3FinishReason;
  usage: LanguageModelV3Usage;
  response?: { modelId?: string | undefined } | undefined;
}

/** A language model as the model path sees it: v3 answers and stream parts, whatever its version. */
export interface V3View {
  readonly provider: string;
  readonly modelId: string;
  doGenerate(call: AiSdkCallOptions): PromiseLike<V3Answer>;
  doStream(call: AiSdkCallOptions): PromiseLike<{ stream: ReadableStream<LanguageModelV3StreamPart> }>;
}

/**
 * A v3 model as it is: it is a real `LanguageModelV3` (its `specificationVersion` says so), whose
 * answers the structural {@link AiSdkLanguageModelV3} only sketches.
 */
export function fromV3(model: AiSdkLanguageModelV3): V3View {
  return model as unknown as V3View;
}

/**
 * A stream of another version's parts as v3 parts: `map` gives each part's v3 form, or
 * `undefined` for a part the model path does not read (it is dropped). An error of the source
 * reaches the reader as it came, and cancelling the result cancels the source.
 */
export function mapParts(
  source: ReadableStream<AiSdkPart>,
  map: (part: AiSdkPart) => LanguageModelV3StreamPart | undefined,
): ReadableStream<LanguageModelV3StreamPart> {
  return source.pipeThrough(
    new TransformStream<AiSdkPart, LanguageModelV3StreamPart>({
      transform(part, controller) {
        const mapped = map(part);
        if (mapped !== undefined) controller.enqueue(mapped);
      },
    }),
  );
}

/** The parts of an answer the model path reads (text and tool calls), which v2, v3 and v4 share. */
export function textAndToolCalls(content: ReadonlyArray<AiSdkPart>): LanguageModelV3Content[] {
  return content.filter((part) => part.type === "text" || part.type === "tool-call") as LanguageModelV3Content[];
}

/** The stream parts whose shape v2, v3 and v4 share and the model path reads; `finish` differs. */
export const SHARED_STREAM_PARTS: ReadonlySet<string> = new Set([
  "text-delta",
  "tool-call",
  "response-metadata",
  "error",
]);
