/**
 * The AI SDK language models `AiSdkModel` accepts, described structurally: only what cairn sends
 * and reads, so cairn's published types name no `@ai-sdk/*` package. An app has one provider
 * interface installed (v2 with AI SDK 5, v3 with AI SDK 6, v4 with AI SDK 7) and its models fit
 * the matching shape here without cairn depending on that package's types.
 */

/** A part of a model's answer or stream; cairn reads `text`, `tool-call` and a few stream parts. */
export interface AiSdkPart {
  readonly type: string;
}

/**
 * The call options cairn sends. Their shape is the same in the v2, v3 and v4 interfaces: system,
 * user text, assistant text and tool calls, tool results as `text` or `error-text`, function
 * tools, a tool choice, `maxOutputTokens`, `temperature` and the abort signal.
 */
export interface AiSdkCallOptions {
  prompt: AiSdkMessage[];
  maxOutputTokens?: number;
  temperature?: number;
  tools?: AiSdkFunctionTool[];
  toolChoice?: { type: "auto" | "none" | "required" };
  abortSignal?: AbortSignal;
}

/** A prompt message, as cairn writes them. */
export type AiSdkMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: Array<{ type: "text"; text: string }> }
  | {
      role: "assistant";
      content: Array<
        { type: "text"; text: string } | { type: "tool-call"; toolCallId: string; toolName: string; input: unknown }
      >;
    }
  | { role: "tool"; content: AiSdkToolResultPart[] };

/** The result of one tool call, sent back to the model. */
export interface AiSdkToolResultPart {
  type: "tool-result";
  toolCallId: string;
  toolName: string;
  output: { type: "text" | "error-text"; value: string };
}

/** A tool the model may call, its arguments as JSON Schema. */
export interface AiSdkFunctionTool {
  type: "function";
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

/** Response metadata: the model id the provider answered with. */
export interface AiSdkResponseMetadata {
  modelId?: string | undefined;
}

/** A v2 answer: the finish reason a string, token counts plain numbers. */
export interface AiSdkGenerateResultV2 {
  content: ReadonlyArray<AiSdkPart>;
  finishReason: string;
  usage: { inputTokens: number | undefined; outputTokens: number | undefined };
  response?: AiSdkResponseMetadata | undefined;
}

/** A v3 or v4 answer: the finish reason unified and raw, token counts broken down. */
export interface AiSdkGenerateResultV3 {
  content: ReadonlyArray<AiSdkPart>;
  finishReason: { unified: string; raw: string | undefined };
  usage: { inputTokens: { total: number | undefined }; outputTokens: { total: number | undefined } };
  response?: AiSdkResponseMetadata | undefined;
}

/** What every version has: which interface it implements, and the names recorded on steps. */
interface AiSdkModelBase<Version extends string, Result> {
  /** The provider interface the model implements. */
  readonly specificationVersion: Version;
  /** e.g. "openai.chat" */
  readonly provider: string;
  /** e.g. "gpt-4o-mini" */
  readonly modelId: string;
  doGenerate(options: AiSdkCallOptions): PromiseLike<Result>;
  doStream(options: AiSdkCallOptions): PromiseLike<{ stream: ReadableStream<AiSdkPart> }>;
}

/** A `LanguageModelV2` (`@ai-sdk/provider` 2.x, AI SDK 5), as cairn uses it. */
export type AiSdkLanguageModelV2 = AiSdkModelBase<"v2", AiSdkGenerateResultV2>;

/** A `LanguageModelV3` (`@ai-sdk/provider` 3.x, AI SDK 6), as cairn uses it. */
export type AiSdkLanguageModelV3 = AiSdkModelBase<"v3", AiSdkGenerateResultV3>;

/** A `LanguageModelV4` (`@ai-sdk/provider` 4.x, AI SDK 7, Node 22+), as cairn uses it. */
export type AiSdkLanguageModelV4 = AiSdkModelBase<"v4", AiSdkGenerateResultV3>;

/** Any AI SDK language model `AiSdkModel` accepts: provider interface v2, v3 or v4. */
export type AiSdkLanguageModel = AiSdkLanguageModelV2 | AiSdkLanguageModelV3 | AiSdkLanguageModelV4;

/** The provider interfaces `AiSdkModel` accepts, by `specificationVersion`. */
export const SUPPORTED_SPECIFICATION_VERSIONS = ["v2", "v3", "v4"] as const;
