/**
 * `cairn/ai-sdk`: models over the Vercel AI SDK's provider interface. `openai()` and
 * `anthropic()` need `@ai-sdk/openai` and `@ai-sdk/anthropic`; `AiSdkModel` takes a model from
 * any AI SDK provider, of the provider interface v2 (AI SDK 5), v3 (AI SDK 6) or v4 (AI SDK 7). They are optional peer dependencies: install what you use beside cairn.
 * @example
 * import { Runtime } from "cairn";
 * import { openai } from "cairn/ai-sdk";
 * const runtime = new Runtime({ agents: [reportBuilder], models: { default: openai("gpt-4o-mini") } });
 * @module cairn/ai-sdk
 */
import { aiSdkProvider } from "./llm/ai-sdk-peers.ts";

// Without `@ai-sdk/provider` (which every AI SDK provider brings) importing this entry fails here
// with a MissingPeerDependencyError that names the package to install.
aiSdkProvider();

export { AiSdkModel, type AiSdkModelOptions } from "./llm/ai-sdk-model.ts";
export type {
  AiSdkCallOptions,
  AiSdkFunctionTool,
  AiSdkGenerateResultV2,
  AiSdkGenerateResultV3,
  AiSdkLanguageModel,
  AiSdkLanguageModelV2,
  AiSdkLanguageModelV3,
  AiSdkLanguageModelV4,
  AiSdkMessage,
  AiSdkPart,
  AiSdkResponseMetadata,
  AiSdkToolResultPart,
} from "./llm/ai-sdk-spec.ts";
export { anthropic, modelFromEnvironment, openai, type ProviderOptions } from "./llm/providers.ts";
