import { type ZodType, z } from "zod";
import {
  AgentLoopStuckError,
  ApprovalDeniedError,
  ApprovalExpiredError,
  InvalidInputError,
  MaxTurnsExceededError,
  ToolFailedError,
} from "./errors.ts";
import { LongOutputs } from "./long-outputs.ts";
import type { ChatMessage, GenerateRequest, ModelResponse, ModelTool, ModelToolCall } from "./model-messages.ts";
import type { Json } from "./records.ts";

/**
 * The agent loop (`ctx.agentLoop`, DESIGN §5): the model ↔ tools cycle, with each model call and
 * each tool call a step of its own. Pure logic over a {@link AgentLoopHost}: the envelope makes
 * the steps, so a replay returns every recorded call and the loop reaches the same point.
 */

/** Options of `ctx.agentLoop`. */
export interface AgentLoopOptions {
  /** A named model of the runtime; the default model when omitted. */
  model?: string;
  system?: string;
  /** The task, as the first user message (after `messages`, when both are given). */
  prompt?: string;
  /** The conversation so far. */
  messages?: ChatMessage[];
  /** The agent's tools (its `defineTool`s, by name) offered to the model. @default all of them */
  tools?: readonly string[];
  /** MCP servers registered on the runtime whose tools are offered too (named `<server>__<tool>`). @default [] */
  mcp?: readonly string[];
  /** Model calls the loop may make; one more ends the run's loop with `MaxTurnsExceededError`. @default 10 */
  maxTurns?: number;
  /** The same call (tool and arguments) failing this many times stops the loop with `AgentLoopStuckError`. @default 3 */
  maxRepeatedFailures?: number;
  /**
   * Characters of one tool output the conversation holds. A longer output is kept out of line
   * (in the tool's step): the model sees its head and tail and a reference it can page through
   * with the built-in `read_output` tool. @default 8000
   */
  maxToolOutputChars?: number;
  /**
   * When the conversation reaches `thresholdTokens`, the older messages are replaced by a summary
   * (a model call, itself a step), keeping the last `keepMessages` verbatim. `false` turns it off.
   * @default { thresholdTokens: 100000, keepMessages: 6 }
   */
  compaction?: { thresholdTokens?: number; keepMessages?: number; model?: string } | false;
  maxOutputTokens?: number;
  temperature?: number;
  /** Per-attempt timeout of each model call. */
  timeoutMs?: number;
}

/** What `ctx.agentLoop` returns. */
export interface AgentLoopResult {
  /** The model's final answer. */
  text: string;
  /** The whole conversation (after any compaction), the final answer last. */
  messages: ChatMessage[];
  /** Model calls made for the conversation (summaries not counted). */
  turns: number;
  /** Tool calls the model made (the refused ones included). */
  toolCalls: number;
  /** Times the conversation was compacted. */
  compactions: number;
  /** Tokens of every model call of the loop, summaries included. */
  usage: { inputTokens: number; outputTokens: number };
}

/** A tool as the loop offers and calls it. */
export interface LoopTool extends ModelTool {
  /** Runs the call as a step; rejects when it failed for good. */
  call(args: Json): Promise<unknown>;
}

/** What the loop needs from the envelope. */
export interface AgentLoopHost {
  /** The tools to offer (the agent's and the MCP servers'). */
  tools(options: AgentLoopOptions): Promise<LoopTool[]>;
  /** A model call as an `llm` step. */
  generate(request: GenerateRequest): Promise<ModelResponse>;
}

const READ_OUTPUT = "read_output";
const SUMMARY_SYSTEM =
  "You compress conversations. Summarise the conversation below for the assistant that continues it: the task, what was found and decided, tool results that still matter (with exact figures, names and references), and what is left to do. Write only the summary.";

/** Runs the loop to the model's final answer. */
export async function runAgentLoop(host: AgentLoopHost, options: AgentLoopOptions): Promise<AgentLoopResult> {
  const { maxTurns, maxRepeated, maxChars, compaction } = loopLimits(options);
  const messages = firstMessages(options);
  const tools = await host.tools(options);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const outputs = new LongOutputs(maxChars, byName.has(READ_OUTPUT) ? `cairn_${READ_OUTPUT}` : READ_OUTPUT);
  const failures = new Map<string, number>();
  const usage = { inputTokens: 0, outputTokens: 0 };
  let turns = 0;
  let toolCalls = 0;
  let compactions = 0;
  // The size of the conversation as the model last counted it, and the messages added since.
  let counted = 0;
  let countedUpTo = 0;
  const request = (extra: Partial<GenerateRequest>): GenerateRequest => {
    const r: GenerateRequest = { ...extra };
    if (options.maxOutputTokens !== undefined) r.maxOutputTokens = options.maxOutputTokens;
    if (options.temperature !== undefined) r.temperature = options.temperature;
    if (options.timeoutMs !== undefined) r.timeoutMs = options.timeoutMs;
    return r;
  };
  const add = (response: ModelResponse) => {
    usage.inputTokens += response.usage.inputTokens;
    usage.outputTokens += response.usage.outputTokens;
  };
  while (turns < maxTurns) {
    if (compaction && turns > 0) {
      const size = counted + estimateTokens(messages.slice(countedUpTo));
      const cut = compactionCut(messages, compaction.keepMessages);
      if (size >= compaction.thresholdTokens && cut > 0) {
        const summary = await host.generate(
          request({
            ...(compaction.model === undefined ? {} : { model: compaction.model }),
            system: SUMMARY_SYSTEM,
            prompt: transcript(messages.slice(0, cut)),
          }),
        );
        add(summary);
        messages.splice(0, cut, { role: "user", content: `Summary of the conversation so far:\n${summary.text}` });
        compactions++;
        counted = 0;
        countedUpTo = 0;
      }
    }
    const offered: ModelTool[] = tools.map(({ name, description, inputSchema }) =>
      description === undefined ? { name, inputSchema } : { name, description, inputSchema },
    );
    if (outputs.size > 0) offered.push(outputs.tool());
    const response = await host.generate(
      request({
        ...(options.model === undefined ? {} : { model: options.model }),
        ...(options.system === undefined ? {} : { system: options.system }),
        messages: [...messages],
        ...(offered.length > 0 ? { tools: offered } : {}),
      }),
    );
    turns++;
    add(response);
    counted = response.usage.inputTokens + response.usage.outputTokens;
    const calls = response.toolCalls ?? [];
    messages.push(
      calls.length > 0
        ? { role: "assistant", content: response.text, toolCalls: calls }
        : { role: "assistant", content: response.text },
    );
    countedUpTo = messages.length;
    if (calls.length === 0) return { text: response.text, messages, turns, toolCalls, compactions, usage };
    toolCalls += calls.length;
    // Calls start in the model's order (their steps are numbered so) and run side by side.
    const results = await Promise.all(calls.map((call) => callTool(call, byName, outputs)));
    addToolResults(messages, calls, results, failures, maxRepeated);
  }
  throw new MaxTurnsExceededError(
    `the agent loop made ${maxTurns} model calls without a final answer (maxTurns ${maxTurns}); raise maxTurns or narrow the task`,
  );
}

/** The loop's limits from its options (each checked), and its compaction settings unless turned off. */
function loopLimits(options: AgentLoopOptions) {
  return {
    maxTurns: positive(options.maxTurns, 10, "maxTurns"),
    maxRepeated: positive(options.maxRepeatedFailures, 3, "maxRepeatedFailures"),
    maxChars: positive(options.maxToolOutputChars, 8000, "maxToolOutputChars"),
    compaction:
      options.compaction === false
        ? undefined
        : {
            thresholdTokens: positive(options.compaction?.thresholdTokens, 100_000, "compaction.thresholdTokens"),
            keepMessages: positive(options.compaction?.keepMessages, 6, "compaction.keepMessages"),
            model: options.compaction?.model ?? options.model,
          },
  };
}

/** The conversation the loop starts from: `messages`, then `prompt`; refused when empty. */
function firstMessages(options: AgentLoopOptions): ChatMessage[] {
  const messages: ChatMessage[] = [...(options.messages ?? [])];
  if (options.prompt !== undefined) messages.push({ role: "user", content: options.prompt });
  if (messages.length === 0) {
    throw new InvalidInputError("ctx.agentLoop needs a prompt or messages: pass { prompt: 'the task' }");
  }
  return messages;
}

/**
 * Adds the tool calls' results to the conversation, in the model's order; the same call failing
 * `maxRepeated` times stops the loop with `AgentLoopStuckError`.
 */
function addToolResults(
  messages: ChatMessage[],
  calls: readonly ModelToolCall[],
  results: readonly { content: string; isError: boolean }[],
  failures: Map<string, number>,
  maxRepeated: number,
): void {
  for (const [i, call] of calls.entries()) {
    const result = results[i] as { content: string; isError: boolean };
    messages.push({
      role: "tool",
      toolCallId: call.id,
      name: call.name,
      content: result.content,
      isError: result.isError,
    });
    if (!result.isError) continue;
    const key = `${call.name} ${JSON.stringify(call.args)}`;
    const count = (failures.get(key) ?? 0) + 1;
    failures.set(key, count);
    if (count >= maxRepeated) {
      throw new AgentLoopStuckError(
        `the model called ${call.name} with the same arguments ${count} times and it failed each time (last: ${clip(result.content, 300)}); fix the tool or the prompt, or raise maxRepeatedFailures`,
      );
    }
  }
}

/** One tool call: refused ones and tool failures go back to the model as errors; governance and stops end the loop. */
async function callTool(
  call: ModelToolCall,
  tools: Map<string, LoopTool>,
  outputs: LongOutputs,
): Promise<{ content: string; isError: boolean }> {
  if (call.name === outputs.name && outputs.size > 0) return outputs.read(call.args);
  const tool = tools.get(call.name);
  if (!tool) {
    const known = [...tools.keys(), ...(outputs.size > 0 ? [outputs.name] : [])].join(", ") || "none";
    return { content: `Error: there is no tool "${call.name}". Available tools: ${known}.`, isError: true };
  }
  if (typeof call.args === "string") {
    return {
      content: `Error: the arguments of ${call.name} are not valid JSON: ${clip(call.args, 200)}`,
      isError: true,
    };
  }
  try {
    return { content: outputs.fit(await tool.call(call.args)), isError: false };
  } catch (error) {
    if (error instanceof InvalidInputError) {
      const issues = error.issues.map(
        (i) => `${i.path.length ? i.path.map(String).join(".") : "(root)"}: ${i.message}`,
      );
      return {
        content: `Error: invalid arguments for ${call.name}: ${issues.join("; ") || error.message}. Call it again with arguments that match its schema.`,
        isError: true,
      };
    }
    if (error instanceof ToolFailedError) return { content: `Error: ${toolError(error)}`, isError: true };
    if (error instanceof ApprovalDeniedError || error instanceof ApprovalExpiredError) {
      return { content: `Error: the call was not approved: ${error.message}`, isError: true };
    }
    throw error;
  }
}

/** The message of the error the tool itself threw, not the wrapper's. */
function toolError(error: ToolFailedError): string {
  const cause = error.cause as { message?: unknown } | undefined;
  return typeof cause?.message === "string" ? cause.message : error.message;
}

/**
 * Where the messages to summarise end: before the last `keep`, moved back so a tool result is
 * never separated from the call it answers. 0 when there is nothing to summarise.
 */
function compactionCut(messages: readonly ChatMessage[], keep: number): number {
  let cut = messages.length - keep;
  while (cut > 0 && messages[cut]?.role === "tool") cut--;
  return cut > 1 ? cut : 0;
}

/** A rough token count (four characters a token) of messages the model has not counted yet. */
function estimateTokens(messages: readonly ChatMessage[]): number {
  let chars = 0;
  for (const m of messages)
    chars += m.content.length + (m.role === "assistant" ? JSON.stringify(m.toolCalls ?? []).length : 0);
  return Math.ceil(chars / 4);
}

/** The conversation as text for the summarising call. */
function transcript(messages: readonly ChatMessage[]): string {
  return messages
    .map((m) => {
      if (m.role === "tool") return `[tool ${m.name}${m.isError ? " failed" : ""}]: ${m.content}`;
      const calls =
        m.role === "assistant" && m.toolCalls?.length
          ? ` (calls ${m.toolCalls.map((c) => `${c.name}(${JSON.stringify(c.args)})`).join(", ")})`
          : "";
      return `[${m.role}]${calls}: ${m.content}`;
    })
    .join("\n\n");
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new InvalidInputError(`ctx.agentLoop ${name} must be a positive integer (got ${String(value)})`);
  }
  return value;
}

/** A tool's zod input schema as the JSON Schema a model is given (any object when it has none). */
export function toolJsonSchema(schema: ZodType | undefined): Record<string, unknown> {
  if (!schema) return { type: "object", additionalProperties: true };
  const { $schema: _, ...json } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
  return json;
}
