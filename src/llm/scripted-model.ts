import type { GenerateRequest, ModelResponse } from "../core/context.ts";
import type { ModelProvider } from "./model-provider.ts";

/** One scripted answer: fixed text, or computed from the request. */
export type ScriptedReply = string | ((request: GenerateRequest, call: number) => string);

/** Options of {@link ScriptedModel}. */
export interface ScriptedModelOptions {
  /** Name recorded on steps. @default "scripted" */
  name?: string;
  /**
   * Answers in call order; after the last one the last is reused. With none, the model answers
   * with a deterministic digest of the prompt.
   * @default []
   */
  replies?: ScriptedReply[];
}

/**
 * A deterministic model for tests and demos: no network, same answer for the same calls.
 * Token usage is counted as whitespace-separated words.
 *
 * @example
 * new ScriptedModel({ replies: ["Revenue grew 12%."] })
 */
export class ScriptedModel implements ModelProvider {
  readonly name: string;
  readonly #replies: ScriptedReply[];
  #calls = 0;

  constructor(options: ScriptedModelOptions = {}) {
    this.name = options.name ?? "scripted";
    this.#replies = options.replies ?? [];
  }

  /** How many times the model has been called (a replayed step does not call it). */
  get calls(): number {
    return this.#calls;
  }

  async generate(request: GenerateRequest): Promise<ModelResponse> {
    const call = this.#calls++;
    const prompt = promptText(request);
    const reply = this.#replies[Math.min(call, this.#replies.length - 1)];
    const text = reply === undefined ? defaultReply(prompt) : typeof reply === "string" ? reply : reply(request, call);
    return {
      text,
      finishReason: "stop",
      usage: { inputTokens: countTokens(prompt), outputTokens: countTokens(text) },
      model: this.name,
    };
  }
}

function promptText(request: GenerateRequest): string {
  const parts = [request.system ?? "", request.prompt ?? "", ...(request.messages ?? []).map((m) => m.content)];
  return parts.filter(Boolean).join("\n");
}

function countTokens(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

function defaultReply(prompt: string): string {
  const words = prompt.split(/\s+/).filter(Boolean);
  return `Summary of ${words.length} words: ${words.slice(0, 12).join(" ")}${words.length > 12 ? " …" : ""}`;
}
