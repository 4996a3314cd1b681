import type { ChatMessage, GenerateRequest, ModelResponse } from "../../src/core/model-messages.ts";
import type { AiSdkModel } from "../../src/llm/ai-sdk-model.ts";

/** One attempt, as the runtime makes it. */
export async function call(
  model: AiSdkModel,
  request: GenerateRequest,
  onText?: (d: string) => void,
): Promise<ModelResponse> {
  return model.generate(request, { signal: new AbortController().signal, ...(onText && { onText }) });
}

/** What one attempt threw. */
export async function failure(model: AiSdkModel, request: GenerateRequest = { prompt: "hi" }): Promise<Error> {
  try {
    await call(model, request);
  } catch (error) {
    return error as Error;
  }
  throw new Error("the call did not fail");
}

/** A tool the model tests offer. */
export const weather = {
  name: "get_weather",
  description: "The weather in a city",
  inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

/** A conversation after one step that called two tools, one of which failed. */
export const afterTools: ChatMessage[] = [
  { role: "user", content: "Weather in Paris and Oslo?" },
  {
    role: "assistant",
    content: "",
    toolCalls: [
      { id: "c1", name: "get_weather", args: { city: "Paris" } },
      { id: "c2", name: "get_weather", args: { city: "Oslo" } },
    ],
  },
  { role: "tool", toolCallId: "c1", name: "get_weather", content: "18°C, sunny" },
  { role: "tool", toolCallId: "c2", name: "get_weather", content: "station offline", isError: true },
];
