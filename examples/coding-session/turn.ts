import type { ChatMessage, ModelToolCall, WorkflowContext } from "../../src/index.ts";
import { CODER_SYSTEM, CODER_TOOLS } from "./scripted-coder.ts";
import { REPO, type WorkspaceHandle } from "./workspace.ts";

/**
 * One turn of the session: the loop of model calls and tool calls, run by the workflow outside the
 * sandbox. Each model call is an `llm` step; each tool call the model makes is a sandbox step
 * (`exec`, `writeFile`, `readFile`) in the repository's folder. The model's key stays with the
 * runtime that calls the model; nothing of it reaches the sandbox.
 */

/** How a turn runs its commands and how long it may go on. */
export interface TurnOptions {
  /** The runtime's model the turn calls. */
  model: string;
  /** Model calls one turn may make. */
  maxModelCalls: number;
  /** Start-to-close limit of each command. */
  commandTimeoutMs: number;
  /** A command that neither prints nor gets a live answer from its sandbox this long: the sandbox is lost. */
  heartbeatTimeoutMs: number;
}

/** The characters of a file or a command's output the conversation keeps. */
const MAX_CONTENT = 8000;

/** Whether `error` (or what caused it) says that the sandbox is gone. */
export function isSandboxLost(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if ((e as { code?: unknown }).code === "SANDBOX_LOST") return true;
  }
  return false;
}

/** The retry rule of the turn's sandbox calls: one more try, then the workflow rebuilds. */
export const SANDBOX_RETRY = { maximumAttempts: 2, initialIntervalMs: 200 };

async function callTool(ws: WorkspaceHandle, call: ModelToolCall, o: TurnOptions): Promise<string> {
  const args = (call.args ?? {}) as Record<string, unknown>;
  const text = (name: string) => {
    const value = args[name];
    if (typeof value !== "string") throw new Error(`${call.name} needs "${name}" as a string`);
    return value;
  };
  switch (call.name) {
    case "run_command": {
      const result = await ws.exec(text("command"), {
        cwd: REPO,
        timeoutMs: o.commandTimeoutMs,
        heartbeatTimeoutMs: o.heartbeatTimeoutMs,
        retry: SANDBOX_RETRY,
      });
      const how = result.signal ? `killed by ${result.signal}` : `exit ${result.exitCode}`;
      return `${how}\n${result.tail}`.slice(-MAX_CONTENT);
    }
    case "write_file": {
      const content = text("content");
      await ws.writeFile(`${REPO}/${text("path")}`, content);
      return `wrote ${content.length} characters to ${text("path")}`;
    }
    case "read_file":
      return (await ws.readFile(`${REPO}/${text("path")}`)).slice(0, MAX_CONTENT);
    default:
      throw new Error(`no tool "${call.name}" (the tools are ${CODER_TOOLS.map((t) => t.name).join(", ")})`);
  }
}

/**
 * Carries out the model's tool calls in order, each answer appended to `messages`. A lost sandbox
 * answers this call and those after it with the loss (so the conversation stays well formed for
 * the retried turn) and is thrown on to the workflow, which rebuilds.
 */
async function carryOut(ws: WorkspaceHandle, calls: ModelToolCall[], messages: ChatMessage[], o: TurnOptions) {
  for (const [i, call] of calls.entries()) {
    try {
      messages.push({ role: "tool", toolCallId: call.id, name: call.name, content: await callTool(ws, call, o) });
    } catch (error) {
      const lost = isSandboxLost(error);
      for (const unanswered of lost ? calls.slice(i) : [call]) {
        const content = lost ? "the sandbox was lost before this call finished" : (error as Error).message;
        messages.push({ role: "tool", toolCallId: unanswered.id, name: unanswered.name, content, isError: true });
      }
      if (lost) throw error;
    }
  }
}

/**
 * Runs one turn: `text` as the user's message, then model calls and their tool calls until the model
 * answers without calling a tool. Appends everything to `messages`; returns the answer.
 */
export async function runTurn(
  ctx: WorkflowContext,
  ws: WorkspaceHandle,
  messages: ChatMessage[],
  text: string,
  o: TurnOptions,
): Promise<string> {
  messages.push({ role: "user", content: text });
  for (let call = 0; call < o.maxModelCalls; call++) {
    const answer = await ctx.llm.chat({
      model: o.model,
      system: CODER_SYSTEM,
      messages: [...messages],
      tools: CODER_TOOLS,
    });
    const toolCalls = answer.toolCalls ?? [];
    messages.push({ role: "assistant", content: answer.text, ...(toolCalls.length > 0 ? { toolCalls } : {}) });
    if (toolCalls.length === 0) return answer.text;
    await carryOut(ws, toolCalls, messages, o);
  }
  const stopped = `(the turn stopped after ${o.maxModelCalls} model calls)`;
  messages.push({ role: "assistant", content: stopped });
  return stopped;
}
