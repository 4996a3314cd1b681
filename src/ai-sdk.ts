/**
 * `cairn/ai-sdk`: models over the Vercel AI SDK's provider interface. `openai()` and
 * `anthropic()` need `@ai-sdk/openai` and `@ai-sdk/anthropic`; `AiSdkModel` takes a model from
 * any AI SDK provider. They are optional peer dependencies: install what you use beside cairn.
 * @example
 * import { Runtime } from "cairn";
 * import { openai } from "cairn/ai-sdk";
 * const runtime = new Runtime({ agents: [reportBuilder], models: { default: openai("gpt-4o-mini") } });
 */
import { aiSdkProvider } from "./llm/ai-sdk-peers.ts";

// Without `@ai-sdk/provider` (which every AI SDK provider brings) importing this entry fails here
// with a MissingPeerDependencyError that names the package to install.
aiSdkProvider();

export { AiSdkModel, type AiSdkModelOptions } from "./llm/ai-sdk-model.ts";
export { anthropic, modelFromEnvironment, openai, type ProviderOptions } from "./llm/providers.ts";
