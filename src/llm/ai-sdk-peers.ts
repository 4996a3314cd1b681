import { createRequire } from "node:module";
import type * as Anthropic from "@ai-sdk/anthropic";
import type * as OpenAI from "@ai-sdk/openai";
import type * as Provider from "@ai-sdk/provider";
import { requirePeer } from "../core/peer-dependency.ts";

/*
 * The AI SDK packages are optional peer dependencies of cairn, loaded at first use from
 * `cairn/ai-sdk` only: without them the root entry works, and `cairn/ai-sdk` (or `openai()`,
 * `anthropic()`) fails with a MissingPeerDependencyError that names the package to install.
 */

const load = createRequire(import.meta.url);
let provider: typeof Provider | undefined;
let openai: typeof OpenAI | undefined;
let anthropic: typeof Anthropic | undefined;

/** `@ai-sdk/provider`: the error classes a model call can throw. */
export function aiSdkProvider(): typeof Provider {
  provider ??= requirePeer<typeof Provider>(load, "@ai-sdk/provider", "cairn/ai-sdk");
  return provider;
}

/** `@ai-sdk/openai`, for {@link openai}. */
export function openaiPackage(): typeof OpenAI {
  openai ??= requirePeer<typeof OpenAI>(load, "@ai-sdk/openai", "openai() from cairn/ai-sdk");
  return openai;
}

/** `@ai-sdk/anthropic`, for {@link anthropic}. */
export function anthropicPackage(): typeof Anthropic {
  anthropic ??= requirePeer<typeof Anthropic>(load, "@ai-sdk/anthropic", "anthropic() from cairn/ai-sdk");
  return anthropic;
}
