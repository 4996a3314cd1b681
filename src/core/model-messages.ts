import type { Json } from "./records.ts";

/**
 * What a model call asks and answers: the provider port (`ModelProvider`), the `ctx.llm` client
 * and the agent loop all speak these types.
 */

/** A tool call the model asked for. */
export interface ModelToolCall {
  /** The provider's id of the call; a tool message answers it by this id. */
  id: string;
  name: string;
  /** The arguments the model wrote (parsed JSON; a string when they were not valid JSON). */
  args: Json;
}

/** A message of a chat-style model request. */
export type ChatMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string; toolCalls?: ModelToolCall[] }
  | {
      role: "tool";
      /** The id of the call this answers. */
      toolCallId: string;
      /** The tool's name. */
      name: string;
      content: string;
      /** The call failed: `content` says why. */
      isError?: boolean;
    };

/** A tool offered to the model: its name, what it is for, and its arguments as JSON Schema. */
export interface ModelTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

/** A model request: a prompt or messages. */
export interface GenerateRequest {
  prompt?: string;
  messages?: ChatMessage[];
  system?: string;
  /** A named model registered on the runtime; the default model when omitted. */
  model?: string;
  maxOutputTokens?: number;
  temperature?: number;
  /** Tools the model may call; its answer then may hold `toolCalls`. */
  tools?: ModelTool[];
  /** Whether the model may, must or must not call a tool. @default "auto" */
  toolChoice?: "auto" | "none" | "required";
  /** Per-attempt timeout of the call, over the runtime's `modelTimeoutMs` and the provider's own. */
  timeoutMs?: number;
}

/** What a model call returns. */
export interface ModelResponse {
  text: string;
  finishReason: "stop" | "length" | "tool-calls" | "content-filter" | "error" | "other";
  usage: { inputTokens: number; outputTokens: number };
  /** The model that answered. */
  model: string;
  /** The tools the model asked to call, in its order. */
  toolCalls?: ModelToolCall[];
}
