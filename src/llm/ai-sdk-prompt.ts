import type { GenerateRequest } from "../core/model-messages.ts";
import type { AiSdkCallOptions, AiSdkMessage, AiSdkToolResultPart } from "./ai-sdk-spec.ts";

/** The AI SDK call for a request (nothing secret: keys live in the provider, not here). */
export function callOptions(request: GenerateRequest, signal?: AbortSignal): AiSdkCallOptions {
  const tools = request.tools ?? [];
  return {
    prompt: prompt(request),
    ...(request.maxOutputTokens !== undefined && { maxOutputTokens: request.maxOutputTokens }),
    ...(request.temperature !== undefined && { temperature: request.temperature }),
    ...(tools.length > 0 && {
      tools: tools.map((tool) => ({
        type: "function" as const,
        name: tool.name,
        ...(tool.description !== undefined && { description: tool.description }),
        inputSchema: tool.inputSchema,
      })),
      ...(request.toolChoice !== undefined && { toolChoice: { type: request.toolChoice } }),
    }),
    ...(signal && { abortSignal: signal }),
  };
}

/**
 * The request as an AI SDK prompt: `system` first, then `messages`, then `prompt` as the last user
 * message. The results of one step's tool calls (consecutive tool messages) form one tool
 * message, as the AI SDK's own `generateText` sends them.
 */
function prompt(request: GenerateRequest): AiSdkMessage[] {
  const out: AiSdkMessage[] = [];
  if (request.system) out.push({ role: "system", content: request.system });
  for (const message of request.messages ?? []) {
    switch (message.role) {
      case "system":
        out.push({ role: "system", content: message.content });
        break;
      case "user":
        out.push({ role: "user", content: [{ type: "text", text: message.content }] });
        break;
      case "assistant": {
        const calls = message.toolCalls ?? [];
        out.push({
          role: "assistant",
          content: [
            // Anthropic refuses empty text blocks: a turn of only tool calls has none.
            ...(message.content !== "" || calls.length === 0 ? [{ type: "text" as const, text: message.content }] : []),
            ...calls.map((call) => ({
              type: "tool-call" as const,
              toolCallId: call.id,
              toolName: call.name,
              input: call.args,
            })),
          ],
        });
        break;
      }
      case "tool": {
        const part: AiSdkToolResultPart = {
          type: "tool-result",
          toolCallId: message.toolCallId,
          toolName: message.name,
          output: { type: message.isError ? "error-text" : "text", value: message.content },
        };
        const last = out.at(-1);
        if (last?.role === "tool") last.content.push(part);
        else out.push({ role: "tool", content: [part] });
        break;
      }
    }
  }
  if (request.prompt !== undefined) out.push({ role: "user", content: [{ type: "text", text: request.prompt }] });
  return out;
}
