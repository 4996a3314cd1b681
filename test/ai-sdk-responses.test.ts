import { createOpenAI as createOpenAIV3 } from "@ai-sdk/openai";
import { createOpenAI as createOpenAIV2 } from "@ai-sdk/openai-v2";
import { createOpenAI as createOpenAIV4 } from "@ai-sdk/openai-v4";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import { ModelUnavailableError } from "../src/core/errors.ts";
import type { GenerateRequest, ModelResponse } from "../src/core/model-messages.ts";
import { AiSdkModel } from "../src/llm/ai-sdk-model.ts";
import type { AiSdkLanguageModel } from "../src/llm/ai-sdk-spec.ts";
import { type FakeResponses, fakeResponsesFetch, type ResponsesReply } from "./helpers/fake-responses-fetch.ts";
import { Runtimes } from "./helpers/runtime-helpers.ts";

/**
 * The OpenAI Responses API model (`createOpenAI()(modelId)`, the default of `@ai-sdk/openai` 2.x
 * and later) of each provider interface, v2, v3 and v4, answered by a fake `fetch` with the
 * API's JSON and SSE events. Its stream differs from chat completions' (one event per output
 * item, the finish in `response.completed`), and so does how each version says the stream ended
 * without that event: v2 `"unknown"`, v3 `{ unified: "other" }` without a raw reason, v4
 * `"interrupted"`; all three must fail the attempt rather than keep the cut answer.
 */

type Create = (settings: { apiKey: string; fetch: typeof fetch }) => (modelId: string) => AiSdkLanguageModel;
const versions: Array<{ version: string; create: Create }> = [
  { version: "v2", create: createOpenAIV2 },
  { version: "v3", create: createOpenAIV3 },
  { version: "v4", create: createOpenAIV4 },
];

function model(create: Create, replies: ResponsesReply[], stream = true): { model: AiSdkModel; fake: FakeResponses } {
  const fake = fakeResponsesFetch(...replies);
  return { model: new AiSdkModel(create({ apiKey: "test", fetch: fake.fetch })("gpt-4o-mini"), { stream }), fake };
}

async function call(m: AiSdkModel, request: GenerateRequest, onText?: (d: string) => void): Promise<ModelResponse> {
  return m.generate(request, { signal: new AbortController().signal, ...(onText && { onText }) });
}

const weather = {
  name: "get_weather",
  inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

describe.each(versions)("Responses API, provider interface $version", ({ version, create }) => {
  it.each([true, false])("answers with text, usage, finish reason and model id (stream: %s)", async (stream) => {
    const { model: m, fake } = model(create, [{ text: "Hello there friend", usage: { input: 12, output: 4 } }], stream);
    const deltas: string[] = [];
    const response = await call(m, { prompt: "hi", system: "Be kind." }, (d) => deltas.push(d));
    expect(m.model.specificationVersion).toBe(version);
    expect(m.name).toBe("openai.responses:gpt-4o-mini");
    expect(response).toEqual({
      text: "Hello there friend",
      finishReason: "stop",
      usage: { inputTokens: 12, outputTokens: 4 },
      model: "gpt-4o-mini-2024-07-18",
    });
    expect(deltas).toEqual(stream ? ["Hello", " there", " friend"] : []);
    expect(fake.bodies[0]).toMatchObject({
      model: "gpt-4o-mini",
      input: [
        { role: "system", content: "Be kind." },
        { role: "user", content: [{ type: "input_text", text: "hi" }] },
      ],
    });
  });

  it.each([true, false])("returns the function call the model makes (stream: %s)", async (stream) => {
    const { model: m } = model(
      create,
      [{ call: { id: "call_1", name: "get_weather", args: { city: "Paris" } } }],
      stream,
    );
    const response = await call(m, { prompt: "Weather?", tools: [weather] });
    expect(response.finishReason).toBe("tool-calls");
    expect(response.toolCalls).toEqual([{ id: "call_1", name: "get_weather", args: { city: "Paris" } }]);
  });

  it("a stream that ends without response.completed is a failed attempt, not a short answer", async () => {
    const { model: m } = model(create, [{ text: "one two three", cut: true }]);
    const deltas: string[] = [];
    const error = await call(m, { prompt: "hi" }, (d) => deltas.push(d)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect((error as Error).message).toContain("before the model said it had finished");
    expect(deltas.join("")).toBe("one two three");
  });

  it("a 429 is a ModelUnavailableError carrying Retry-After", async () => {
    const { model: m } = model(create, [{ status: 429, message: "Rate limit reached", retryAfterS: 2 }]);
    const error = await call(m, { prompt: "hi" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect(error).toMatchObject({ status: 429, retryAfterMs: 2000, retryable: true });
  });
});

describe.each(versions)("Responses API through the runtime ($version)", ({ create }) => {
  const runtimes = new Runtimes();
  afterEach(() => runtimes.closeAll());

  const agent = defineAgent({
    name: "forecaster",
    tools: {
      get_weather: defineTool({
        input: z.object({ city: z.string() }),
        run: async (_ctx, { city }) => `${city}: 18°C`,
      }),
    },
    workflows: {
      async forecast(ctx, { question }: { question: string }) {
        const result = await ctx.agentLoop({ prompt: question });
        return { text: result.text, turns: result.turns, usage: result.usage };
      },
    },
  });

  it("an agent loop with a tool round after a 429, journaled with usage and finish reasons", async () => {
    const { model: m, fake } = model(create, [
      { status: 429, message: "Rate limit reached", retryAfterS: 0 },
      { call: { id: "call_9", name: "get_weather", args: { city: "Oslo" } }, usage: { input: 20, output: 6 } },
      { text: "It is 18°C in Oslo.", usage: { input: 31, output: 7 } },
    ]);
    const rt = runtimes.make({
      agents: [agent],
      models: { default: m },
      modelRetry: { initialIntervalMs: 10, jitter: 0 },
    });
    const handle = await rt.run("forecaster", "forecast", { question: "Weather in Oslo?" });
    const done = await rt.waitFor(handle.id, { timeoutMs: 20_000 });
    expect(done.state).toBe("COMPLETED");
    expect(done.output).toEqual({
      text: "It is 18°C in Oslo.",
      turns: 2,
      usage: { inputTokens: 51, outputTokens: 13 },
    });
    const { steps } = await rt.history(handle.id);
    expect(steps.map((s) => `${s.kind}:${s.status}`)).toEqual(["llm:completed", "tool:completed", "llm:completed"]);
    expect(steps[0]?.attempts.map((a) => a.error?.code ?? "ok")).toEqual(["MODEL_UNAVAILABLE", "ok"]);
    expect(steps[0]?.result).toMatchObject({ finishReason: "tool-calls", usage: { inputTokens: 20, outputTokens: 6 } });
    expect(steps[2]?.result).toMatchObject({ finishReason: "stop", usage: { inputTokens: 31, outputTokens: 7 } });
    // The call and its output went back in the Responses API's shape.
    expect(fake.bodies).toHaveLength(3);
    expect(fake.bodies[2]?.input).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: "function_call", call_id: "call_9", name: "get_weather" }),
        expect.objectContaining({ type: "function_call_output", call_id: "call_9", output: "Oslo: 18°C" }),
      ]),
    );
  });
});
