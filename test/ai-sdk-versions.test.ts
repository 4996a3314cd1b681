import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createOpenAI as createOpenAIV3 } from "@ai-sdk/openai";
import { createOpenAI as createOpenAIV2 } from "@ai-sdk/openai-v2";
import { createOpenAI as createOpenAIV4 } from "@ai-sdk/openai-v4";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import { InvalidDefinitionError, ModelUnavailableError } from "../src/core/errors.ts";
import { AiSdkModel } from "../src/llm/ai-sdk-model.ts";
import type { AiSdkLanguageModel } from "../src/llm/ai-sdk-spec.ts";
import { root } from "./helpers/cli.ts";
import { FakeModelServer } from "./helpers/fake-model-server.ts";
import { afterTools, call, failure, weather } from "./helpers/model-calls.ts";
import { Runtimes } from "./helpers/runtime-helpers.ts";

/**
 * `AiSdkModel` over the three AI SDK provider interfaces apps use: v2 (`@ai-sdk/openai` 2.x, AI
 * SDK 5), v3 (3.x, AI SDK 6) and v4 (4.x, AI SDK 7), each the real provider package (installed
 * here under the aliases `@ai-sdk/openai-v2` and `-v4`) talking chat completions to a local server
 * that answers as OpenAI does (JSON and SSE). The same behaviour is asked of each: text, streaming,
 * tool calls both ways, usage and finish reason, a stream cut short, 429 with Retry-After; then
 * an agent loop with a tool round and a retried 429 through a runtime, read back from the journal.
 *
 * The v4 packages declare Node 22+ (`engines`); they run on Node 20.19+ too (where Node can
 * `require` an ES module), so their tests run here on every Node the suite uses.
 */

let server: FakeModelServer;
beforeAll(async () => {
  server = await FakeModelServer.start();
});
afterAll(() => server.close());
afterEach(() => server.reset());

const settings = () => ({ baseURL: `${server.url}/v1`, apiKey: "test" });

// Type-level: each version's real model is accepted as it is, without a cast.
const versions = [
  { version: "v2", model: (): AiSdkLanguageModel => createOpenAIV2(settings()).chat("gpt-4o-mini") },
  { version: "v3", model: (): AiSdkLanguageModel => createOpenAIV3(settings()).chat("gpt-4o-mini") },
  { version: "v4", model: (): AiSdkLanguageModel => createOpenAIV4(settings()).chat("gpt-4o-mini") },
] as const;

describe.each(versions)("provider interface $version", ({ version, model }) => {
  const make = (stream = true) => new AiSdkModel(model(), { stream });

  it("is told apart by its specificationVersion and named as v3 models are", () => {
    const m = make();
    expect(m.model.specificationVersion).toBe(version);
    expect(m.name).toBe("openai.chat:gpt-4o-mini");
  });

  it.each([true, false])("answers a prompt: text, usage, finish reason, model id (stream: %s)", async (stream) => {
    server.script({ text: "Revenue grew 12%.", usage: { input: 21, output: 5 } });
    const response = await call(make(stream), { prompt: "Summarise", system: "Be brief.", maxOutputTokens: 100 });
    expect(response).toEqual({
      text: "Revenue grew 12%.",
      finishReason: "stop",
      usage: { inputTokens: 21, outputTokens: 5 },
      model: "gpt-4o-mini",
    });
    expect(server.requests.map((r) => r.stream)).toEqual([stream]);
    expect(server.requests[0]?.body).toMatchObject({
      model: "gpt-4o-mini",
      max_tokens: 100,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Summarise" },
      ],
    });
  });

  it("streams the text to onText in order, piece by piece", async () => {
    server.script({ text: "one two three four", chunks: ["one", " two", " three", " four"] });
    const deltas: string[] = [];
    const response = await call(make(), { prompt: "count" }, (d) => deltas.push(d));
    expect(deltas).toEqual(["one", " two", " three", " four"]);
    expect(response.text).toBe("one two three four");
  });

  it.each([true, false])("returns the tool calls the model makes (stream: %s)", async (stream) => {
    server.script({
      toolCalls: [
        { name: "get_weather", args: { city: "Paris" }, id: "t1" },
        { name: "get_weather", args: { city: "Oslo" }, id: "t2" },
      ],
    });
    const response = await call(make(stream), { prompt: "Weather?", tools: [weather], toolChoice: "required" });
    expect(response.finishReason).toBe("tool-calls");
    expect(response.toolCalls).toEqual([
      { id: "t1", name: "get_weather", args: { city: "Paris" } },
      { id: "t2", name: "get_weather", args: { city: "Oslo" } },
    ]);
    const body = server.requests[0]?.body;
    // v2 adds `strict: false`.
    expect(body.tools).toMatchObject([
      {
        type: "function",
        function: { name: "get_weather", description: weather.description, parameters: weather.inputSchema },
      },
    ]);
    expect(body.tool_choice).toBe("required");
  });

  it("sends the assistant's tool calls and their results in the wire shape", async () => {
    server.script({ text: "Paris is sunny; Oslo's station is offline." });
    await call(make(), { messages: afterTools, tools: [weather] });
    expect(server.requests[0]?.body.messages).toEqual([
      { role: "user", content: "Weather in Paris and Oslo?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
          { id: "c2", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "18°C, sunny" },
      // v4's OpenAI provider wraps an error result as JSON.
      {
        role: "tool",
        tool_call_id: "c2",
        content: version === "v4" ? '{"error":"station offline"}' : "station offline",
      },
    ]);
  });

  it.each([
    ["destroyed", false],
    ["ended without a finish reason", true],
  ])("a stream %s after its 200 is a failed attempt, not a short answer", async (_how, clean) => {
    server.script({ kind: "cut", text: "one two three four five six", clean });
    const deltas: string[] = [];
    const error = await call(make(), { prompt: "hi" }, (d) => deltas.push(d)).catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect(deltas.join("")).toBe("one two three");
  });

  it("a 429 is retryable and carries Retry-After", async () => {
    server.script({ status: 429, retryAfterS: 2 }, { status: 429, retryAfterMs: 1500 });
    const m = make();
    const seconds = await failure(m);
    expect(seconds).toBeInstanceOf(ModelUnavailableError);
    expect(seconds).toMatchObject({ status: 429, retryAfterMs: 2000, retryable: true, code: "MODEL_UNAVAILABLE" });
    expect(seconds.message).toBe("openai.chat answered 429: Rate limit reached for requests (retry after 2000 ms)");
    expect(await failure(m)).toMatchObject({ retryAfterMs: 1500 });
  });
});

describe("a model of another provider interface", () => {
  const v1 = {
    specificationVersion: "v1",
    provider: "openai.chat",
    modelId: "gpt-3.5-turbo",
    doGenerate: async () => ({}),
    doStream: async () => ({}),
  };

  it("is refused by the types and, at run time, with an error naming the versions supported", () => {
    // @ts-expect-error AI SDK 4's LanguageModelV1 is not an AiSdkLanguageModel
    const make = () => new AiSdkModel(v1);
    expect(make).toThrow(InvalidDefinitionError);
    expect(make).toThrow(
      /a model \(openai\.chat\) with specificationVersion "v1": it accepts AI SDK language models of the provider interfaces v2, v3, v4/,
    );
    expect(() => new AiSdkModel({} as AiSdkLanguageModel)).toThrow(/with no specificationVersion/);
  });
});

describe("the published declarations", () => {
  /** The packages the declarations of `entry` import, following their relative imports. */
  function declaredPackages(entry: string): Set<string> {
    const seen = new Set<string>();
    const packages = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const match of readFileSync(file, "utf8").matchAll(/^(?:import|export)\s[^;]*?from\s+"([^"]+)";/gms)) {
        const spec = match[1] as string;
        if (spec.startsWith(".")) visit(resolve(dirname(file), spec.replace(/\.ts$/, ".d.ts")));
        else packages.add(spec);
      }
    };
    visit(join(root, "dist", entry));
    return packages;
  }

  it("cairn/ai-sdk's types name no @ai-sdk package, so any of v2, v3, v4 installed type-checks", () => {
    if (!existsSync(join(root, "dist", "ai-sdk.d.ts"))) throw new Error("no dist/: run `npm run build` first");
    const packages = [...declaredPackages("ai-sdk.d.ts")];
    expect(packages.filter((p) => p.startsWith("@ai-sdk/"))).toEqual([]);
  });
});

describe.each(versions)("through the runtime ($version)", ({ model }) => {
  const runtimes = new Runtimes();
  afterEach(() => runtimes.closeAll());

  const looked: string[] = [];
  const agent = defineAgent({
    name: "forecaster",
    tools: {
      get_weather: defineTool({
        description: weather.description,
        input: z.object({ city: z.string() }),
        run: async (_ctx, { city }) => {
          looked.push(city);
          return `${city}: 18°C`;
        },
      }),
    },
    workflows: {
      async forecast(ctx, { question }: { question: string }) {
        const result = await ctx.agentLoop({ prompt: question });
        return { text: result.text, turns: result.turns, usage: result.usage };
      },
      async ask(ctx, { prompt }: { prompt: string }) {
        return ctx.llm.generate({ prompt });
      },
    },
  });

  async function run(workflow: string, input: object) {
    const rt = runtimes.make({
      agents: [agent],
      models: { default: new AiSdkModel(model()) },
      modelRetry: { initialIntervalMs: 10, jitter: 0 },
    });
    const handle = await rt.run("forecaster", workflow, input);
    const done = await rt.waitFor(handle.id, { timeoutMs: 20_000 });
    return { done, steps: (await rt.history(handle.id)).steps };
  }

  it("an agent loop calls the tool, answers, and journals usage and finish reasons", async () => {
    looked.length = 0;
    server.script(
      {
        text: "",
        toolCalls: [{ name: "get_weather", args: { city: "Paris" }, id: "w1" }],
        usage: { input: 30, output: 7 },
      },
      { text: "It is 18°C in Paris.", usage: { input: 45, output: 8 } },
    );
    const { done, steps } = await run("forecast", { question: "Weather in Paris?" });
    expect(done.state).toBe("COMPLETED");
    expect(done.output).toEqual({
      text: "It is 18°C in Paris.",
      turns: 2,
      usage: { inputTokens: 75, outputTokens: 15 },
    });
    expect(looked).toEqual(["Paris"]);
    expect(steps.map((s) => `${s.kind}:${s.status}`)).toEqual(["llm:completed", "tool:completed", "llm:completed"]);
    const [first, , last] = steps;
    expect(first?.result).toMatchObject({
      finishReason: "tool-calls",
      toolCalls: [{ id: "w1", name: "get_weather", args: { city: "Paris" } }],
      usage: { inputTokens: 30, outputTokens: 7 },
    });
    expect(last?.result).toMatchObject({ finishReason: "stop", usage: { inputTokens: 45, outputTokens: 8 } });
    expect(first?.usage).toMatchObject({ inputTokens: 30, outputTokens: 7, modelCalls: 1 });
    expect(last?.usage?.costUsd).toBeGreaterThan(0);
    // The tool's result went back to the model as OpenAI's tool message.
    expect(server.requests[1]?.body.messages.at(-1)).toEqual({
      role: "tool",
      tool_call_id: "w1",
      content: "Paris: 18°C",
    });
  });

  it("a 429 with Retry-After is retried after the wait, then succeeds", async () => {
    server.script({ status: 429, retryAfterMs: 300 }, { text: "after the wait" });
    const { done, steps } = await run("ask", { prompt: "q" });
    expect(done.state).toBe("COMPLETED");
    expect(done.output).toBe("after the wait");
    expect(server.requests).toHaveLength(2);
    const [first, second] = server.requests;
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(295);
    expect(steps[0]?.attempts.map((a) => a.error?.code ?? "ok")).toEqual(["MODEL_UNAVAILABLE", "ok"]);
    expect(steps[0]?.attempts[0]?.error?.data).toMatchObject({ status: 429, retryAfterMs: 300 });
  });
});
