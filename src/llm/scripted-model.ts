import { setTimeout as sleep } from "node:timers/promises";
import type { GenerateRequest, ModelResponse } from "../core/model-messages.ts";
import type { ModelCallOptions, ModelProvider } from "../core/model-provider.ts";
import type { RateLimitDeclaration } from "../core/rate-limits.ts";
import type { Json } from "../core/records.ts";

/** A scripted turn: text, tool calls, or both. */
export interface ScriptedTurn {
  text?: string;
  /** Tools the model "asks" to call; ids are made up (`call_<n>_<i>`) when not given. */
  toolCalls?: { name: string; args: Json; id?: string }[];
}

/** One scripted answer: fixed text or a turn, or either computed from the request. */
export type ScriptedReply = string | ScriptedTurn | ((request: GenerateRequest, call: number) => string | ScriptedTurn);

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
  /** Milliseconds between streamed words, to watch streaming in a demo. @default 0 */
  streamDelayMs?: number;
  /** A rate limit on its calls (see `ModelProvider.rateLimit`). @default no limit */
  rateLimit?: RateLimitDeclaration;
}

/**
 * A deterministic model for tests and demos: no network, same answer for the same calls. Its
 * text is streamed word by word; token usage is counted as whitespace-separated words.
 *
 * @example
 * new ScriptedModel({ replies: ["Revenue grew 12%."] })
 * new ScriptedModel({ replies: [{ toolCalls: [{ name: "search", args: { q: "cairn" } }] }, "Found it."] })
 */
export class ScriptedModel implements ModelProvider {
  readonly name: string;
  readonly rateLimit: RateLimitDeclaration | undefined;
  readonly #replies: ScriptedReply[];
  readonly #delayMs: number;
  #calls = 0;

  constructor(options: ScriptedModelOptions = {}) {
    this.name = options.name ?? "scripted";
    this.#replies = options.replies ?? [];
    this.#delayMs = options.streamDelayMs ?? 0;
    this.rateLimit = options.rateLimit;
  }

  /** How many times the model has been called (a replayed step does not call it). */
  get calls(): number {
    return this.#calls;
  }

  async generate(request: GenerateRequest, options?: ModelCallOptions): Promise<ModelResponse> {
    const call = this.#calls++;
    const prompt = promptText(request);
    const reply = this.#replies[Math.min(call, this.#replies.length - 1)];
    const made =
      reply === undefined ? defaultReply(prompt) : typeof reply === "function" ? reply(request, call) : reply;
    const turn: ScriptedTurn = typeof made === "string" ? { text: made } : made;
    const text = turn.text ?? "";
    if (options?.onText) {
      for (const word of text.match(/\S+\s*/g) ?? []) {
        if (this.#delayMs > 0) await sleep(this.#delayMs, undefined, { signal: options.signal });
        options.onText(word);
      }
    }
    const toolCalls = (turn.toolCalls ?? []).map((c, i) => ({
      id: c.id ?? `call_${call}_${i}`,
      name: c.name,
      args: c.args,
    }));
    return {
      text,
      finishReason: toolCalls.length > 0 ? "tool-calls" : "stop",
      usage: { inputTokens: countTokens(prompt), outputTokens: countTokens(text) + toolCalls.length },
      model: this.name,
      ...(toolCalls.length > 0 ? { toolCalls } : {}),
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
