import { InvalidDefinitionError } from "../core/errors.ts";
import type { ModelProvider } from "../core/model-provider.ts";
import type { RateLimitDeclaration } from "../core/rate-limits.ts";
import { AiSdkModel } from "./ai-sdk-model.ts";
import { anthropicPackage, openaiPackage } from "./ai-sdk-peers.ts";

/**
 * Options of {@link openai} and {@link anthropic}. The key stays in the provider (sent as a
 * header), never in the request the runtime journals.
 */
export interface ProviderOptions {
  /** @default the provider's environment variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`), read at each request */
  apiKey?: string | undefined;
  /** Where the API lives, e.g. `http://localhost:11434/v1`. @default `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL`, else the vendor's */
  baseURL?: string | undefined;
  /** Extra HTTP headers sent with every request. */
  headers?: Record<string, string> | undefined;
  /** Name recorded on steps. @default "openai.chat:<modelId>" / "anthropic.messages:<modelId>" */
  name?: string | undefined;
  /** Stream answers (text reaches the run's event stream as it comes). @default true */
  stream?: boolean | undefined;
  /**
   * A rate limit on its calls, shared by every worker: a name of the runtime's `rateLimits`
   * (`"openai"`), or `{ limit, per }` of its own (see `ModelProvider.rateLimit`). @default no limit
   */
  rateLimit?: RateLimitDeclaration | undefined;
}

/**
 * An OpenAI model over the chat-completions API, the wire format every OpenAI-compatible server
 * speaks too (vLLM, Ollama, llama.cpp, LiteLLM …: give its `baseURL`).
 *
 * @example
 * new Runtime({ agents, models: { default: openai("gpt-4o-mini") } })
 */
export function openai(modelId: string, options: ProviderOptions = {}): AiSdkModel {
  const provider = openaiPackage().createOpenAI({
    ...(options.apiKey !== undefined && { apiKey: options.apiKey }),
    ...(options.baseURL !== undefined && { baseURL: options.baseURL }),
    ...(options.headers !== undefined && { headers: options.headers }),
  });
  return new AiSdkModel(provider.chat(modelId), {
    name: options.name,
    stream: options.stream,
    rateLimit: options.rateLimit,
  });
}

/**
 * An Anthropic model over the Messages API.
 *
 * @example
 * new Runtime({ agents, models: { default: anthropic("claude-haiku-4-5") } })
 */
export function anthropic(modelId: string, options: ProviderOptions = {}): AiSdkModel {
  const provider = anthropicPackage().createAnthropic({
    ...(options.apiKey !== undefined && { apiKey: options.apiKey }),
    ...(options.baseURL !== undefined && { baseURL: options.baseURL }),
    ...(options.headers !== undefined && { headers: options.headers }),
  });
  return new AiSdkModel(provider.messages(modelId), {
    name: options.name,
    stream: options.stream,
    rateLimit: options.rateLimit,
  });
}

/**
 * The model the environment configures, so the same agent runs against a real model where keys
 * are set and against `fallback()` (e.g. a `ScriptedModel`) where none are:
 * 1. `OPENAI_BASE_URL`: an OpenAI-compatible server, model `CAIRN_MODEL` or `OPENAI_MODEL`
 *    (required), key `OPENAI_API_KEY` if set (local servers rarely check one);
 * 2. `OPENAI_API_KEY`: OpenAI, model `CAIRN_MODEL` or "gpt-4o-mini";
 * 3. `ANTHROPIC_API_KEY`: Anthropic (at `ANTHROPIC_BASE_URL` if set), model `CAIRN_MODEL` or
 *    "claude-haiku-4-5";
 * 4. otherwise `fallback()`.
 *
 * @throws InvalidDefinitionError when `OPENAI_BASE_URL` is set but no model is named.
 */
export function modelFromEnvironment(
  env: Record<string, string | undefined> = process.env,
  fallback: () => ModelProvider,
): ModelProvider {
  const value = (name: string) => {
    const v = env[name]?.trim();
    return v ? v : undefined;
  };
  const model = value("CAIRN_MODEL");
  const baseURL = value("OPENAI_BASE_URL");
  if (baseURL) {
    const id = model ?? value("OPENAI_MODEL");
    if (!id) {
      throw new InvalidDefinitionError(
        `OPENAI_BASE_URL is set (${baseURL}) but no model is named: set CAIRN_MODEL (or OPENAI_MODEL) to a model the server serves`,
      );
    }
    // The SDK insists on a key; a server that checks none ignores this placeholder.
    return openai(id, { baseURL, apiKey: value("OPENAI_API_KEY") ?? "none" });
  }
  const openaiKey = value("OPENAI_API_KEY");
  if (openaiKey) return openai(model ?? "gpt-4o-mini", { apiKey: openaiKey, baseURL: "https://api.openai.com/v1" });
  const anthropicKey = value("ANTHROPIC_API_KEY");
  if (anthropicKey) {
    return anthropic(model ?? "claude-haiku-4-5", {
      apiKey: anthropicKey,
      baseURL: value("ANTHROPIC_BASE_URL") ?? "https://api.anthropic.com/v1",
    });
  }
  return fallback();
}
