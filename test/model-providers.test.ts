import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { defineAgent } from "../src/agent/define.ts";
import { ContextOverflowError, ModelRequestError, ModelUnavailableError } from "../src/core/errors.ts";
import type { AiSdkModel } from "../src/llm/ai-sdk-model.ts";
import { modelError, retryAfterMs } from "../src/llm/model-errors.ts";
import { anthropic, modelFromEnvironment, openai } from "../src/llm/providers.ts";
import { ScriptedModel } from "../src/llm/scripted-model.ts";
import { FakeModelServer } from "./helpers/fake-model-server.ts";
import { afterTools, call, failure, weather } from "./helpers/model-calls.ts";
import { Runtimes } from "./helpers/runtime-helpers.ts";

/**
 * Real AI SDK providers (`@ai-sdk/openai` chat completions, `@ai-sdk/anthropic` messages) through
 * {@link AiSdkModel}, against a local server speaking both wire formats: what is sent, what comes
 * back, and which error class each failure becomes; then through the runtime, where those classes
 * decide retries (and Retry-After how long to wait).
 */

let server: FakeModelServer;
beforeAll(async () => {
  server = await FakeModelServer.start();
});
afterAll(() => server.close());
afterEach(() => server.reset());

const formats = [
  {
    format: "openai" as const,
    model: (stream = true) => openai("gpt-4o-mini", { baseURL: `${server.url}/v1`, apiKey: "test", stream }),
  },
  {
    format: "anthropic" as const,
    model: (stream = true) => anthropic("claude-haiku-4-5", { baseURL: `${server.url}/v1`, apiKey: "test", stream }),
  },
];

describe.each(formats)("$format wire format", ({ format, model }) => {
  it("answers a prompt: text, usage, finish reason and the bare model id", async () => {
    server.script({ text: "Revenue grew 12%.", usage: { input: 21, output: 5 } });
    const m = model();
    const response = await call(m, { prompt: "Summarise", system: "Be brief.", maxOutputTokens: 100, temperature: 0 });
    expect(response).toEqual({
      text: "Revenue grew 12%.",
      finishReason: "stop",
      usage: { inputTokens: 21, outputTokens: 5 },
      model: format === "openai" ? "gpt-4o-mini" : "claude-haiku-4-5",
    });
    expect(m.name).toBe(format === "openai" ? "openai.chat:gpt-4o-mini" : "anthropic.messages:claude-haiku-4-5");
    expect(server.requests).toHaveLength(1);
    const [request] = server.requests;
    expect(request?.stream).toBe(true);
    expect(request?.headers[format === "openai" ? "authorization" : "x-api-key"]).toBe(
      format === "openai" ? "Bearer test" : "test",
    );
    if (format === "openai") {
      expect(request?.body).toMatchObject({
        model: "gpt-4o-mini",
        max_tokens: 100,
        temperature: 0,
        stream_options: { include_usage: true },
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "Summarise" },
        ],
      });
    } else {
      expect(request?.body).toMatchObject({
        model: "claude-haiku-4-5",
        max_tokens: 100,
        temperature: 0,
        system: [{ type: "text", text: "Be brief." }],
        messages: [{ role: "user", content: [{ type: "text", text: "Summarise" }] }],
      });
    }
  });

  it("streams the text to onText in order, piece by piece", async () => {
    server.script({ text: "one two three four", chunks: ["one", " two", " three", " four"] });
    const deltas: string[] = [];
    const response = await call(model(), { prompt: "count" }, (d) => deltas.push(d));
    expect(deltas).toEqual(["one", " two", " three", " four"]);
    expect(response.text).toBe("one two three four");
  });

  it("without streaming, makes one plain request and maps the same answer", async () => {
    server.script({ text: "plain answer", usage: { input: 7, output: 2 } });
    const deltas: string[] = [];
    const response = await call(model(false), { prompt: "hi" }, (d) => deltas.push(d));
    expect(response).toMatchObject({ text: "plain answer", usage: { inputTokens: 7, outputTokens: 2 } });
    expect(deltas).toEqual([]);
    expect(server.requests.map((r) => r.stream)).toEqual([false]);
  });

  it.each([true, false])("returns the tool calls the model makes (stream: %s)", async (stream) => {
    server.script({
      text: stream ? "Checking." : "",
      toolCalls: [
        { name: "get_weather", args: { city: "Paris" }, id: "t1" },
        { name: "get_weather", args: { city: "Oslo" }, id: "t2" },
      ],
    });
    const response = await call(model(stream), {
      prompt: "Weather in Paris and Oslo?",
      tools: [weather],
      toolChoice: "auto",
    });
    expect(response.finishReason).toBe("tool-calls");
    expect(response.toolCalls).toEqual([
      { id: "t1", name: "get_weather", args: { city: "Paris" } },
      { id: "t2", name: "get_weather", args: { city: "Oslo" } },
    ]);
    const body = server.requests[0]?.body;
    if (format === "openai") {
      expect(body.tools).toEqual([
        {
          type: "function",
          function: { name: "get_weather", description: weather.description, parameters: weather.inputSchema },
        },
      ]);
      expect(body.tool_choice).toBe("auto");
    } else {
      expect(body.tools).toMatchObject([
        { name: "get_weather", description: weather.description, input_schema: weather.inputSchema },
      ]);
      expect(body.tool_choice).toEqual({ type: "auto" });
    }
  });

  it("sends the assistant's tool calls and their results (an error one included) in the wire shape", async () => {
    server.script({ text: "Paris is sunny; Oslo's station is offline." });
    const response = await call(model(), { messages: afterTools, tools: [weather] });
    expect(response.text).toBe("Paris is sunny; Oslo's station is offline.");
    const body = server.requests[0]?.body;
    if (format === "openai") {
      expect(body.messages).toEqual([
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
        { role: "tool", tool_call_id: "c2", content: "station offline" },
      ]);
    } else {
      // Both results in one user message, as Anthropic requires after a turn of parallel calls.
      expect(body.messages).toEqual([
        { role: "user", content: [{ type: "text", text: "Weather in Paris and Oslo?" }] },
        {
          role: "assistant",
          content: [
            { type: "tool_use", id: "c1", name: "get_weather", input: { city: "Paris" } },
            { type: "tool_use", id: "c2", name: "get_weather", input: { city: "Oslo" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "c1", content: "18°C, sunny" },
            { type: "tool_result", tool_use_id: "c2", content: "station offline", is_error: true },
          ],
        },
      ]);
    }
  });

  it("a 429 is retryable and carries Retry-After (seconds, milliseconds or a date)", async () => {
    server.script(
      { status: 429, retryAfterS: 2 },
      { status: 429, retryAfterMs: 1500 },
      { status: 429, retryAfterDate: new Date(Date.now() + 30_000) },
    );
    const m = model();
    const seconds = await failure(m);
    expect(seconds).toBeInstanceOf(ModelUnavailableError);
    expect(seconds).toMatchObject({ status: 429, retryAfterMs: 2000, retryable: true, code: "MODEL_UNAVAILABLE" });
    expect(seconds.message).toBe(
      `${format === "openai" ? "openai.chat" : "anthropic.messages"} answered 429: Rate limit reached for requests (retry after 2000 ms)`,
    );
    expect(await failure(m)).toMatchObject({ retryAfterMs: 1500 });
    const dated = (await failure(m)) as ModelUnavailableError;
    // An HTTP date has whole seconds.
    expect(dated.retryAfterMs).toBeGreaterThan(27_000);
    expect(dated.retryAfterMs).toBeLessThanOrEqual(30_000);
    expect(server.requests).toHaveLength(3);
  });

  it.each([503, 529, 500, 408])("a %s is retryable (ModelUnavailableError)", async (status) => {
    server.script({ status });
    const error = await failure(model());
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect(error).toMatchObject({ status, retryAfterMs: undefined, retryable: true });
    if (status === 529) expect(error.message).toContain("answered 529: Overloaded");
    expect(server.requests).toHaveLength(1);
  });

  it.each([400, 401, 404, 422])("a %s is not retryable (ModelRequestError)", async (status) => {
    server.script({ status, message: "you asked for something odd" });
    const error = await failure(model());
    expect(error).toBeInstanceOf(ModelRequestError);
    expect(error).not.toBeInstanceOf(ContextOverflowError);
    expect(error).toMatchObject({ status, retryable: false, code: "MODEL_REQUEST_REJECTED" });
    expect(error.message).toContain(`answered ${status}: you asked for something odd`);
  });

  it("the vendor's context-length error is a ContextOverflowError that says what to do", async () => {
    server.script({ kind: "context" });
    const error = await failure(model());
    expect(error).toBeInstanceOf(ContextOverflowError);
    expect(error).toMatchObject({ status: 400, retryable: false, code: "CONTEXT_OVERFLOW" });
    expect(error.message).toContain(format === "openai" ? "maximum context length is 128000" : "prompt is too long");
    expect(error.message).toContain("shorten the conversation");
    expect(error.message).toContain("a model with a larger window");
  });

  it.each([
    ["destroyed", false],
    ["ended early", true],
  ])("a stream %s after its 200 is a failed attempt, not a short answer", async (_how, clean) => {
    server.script({ kind: "cut", text: "one two three four five six", clean });
    const deltas: string[] = [];
    const error = await call(model(), { prompt: "hi" }, (d) => deltas.push(d)).catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect((error as ModelUnavailableError).retryable).toBe(true);
    // Some text came before the cut.
    expect(deltas.join("")).toBe("one two three");
  });

  it("a non-streamed response cut halfway is a failed attempt", async () => {
    server.script({ kind: "cut" });
    expect(await failure(model(false))).toBeInstanceOf(ModelUnavailableError);
  });

  it("an abort by the runtime's signal throws the signal's reason as it is", async () => {
    server.script({ kind: "slow", delayMs: 300, text: "a b c d" });
    const controller = new AbortController();
    const reason = new Error("the runtime's own timeout");
    setTimeout(() => controller.abort(reason), 100);
    const started = Date.now();
    const error = await model()
      .generate({ prompt: "hi" }, { signal: controller.signal })
      .catch((e: unknown) => e);
    expect(error).toBe(reason);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe("error mapping", () => {
  it("a server that cannot be reached is retryable, with no status", async () => {
    const closed = await FakeModelServer.start();
    const url = closed.url;
    await closed.close();
    const error = await failure(openai("gpt-4o-mini", { baseURL: `${url}/v1`, apiKey: "test" }));
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect(error).toMatchObject({ status: undefined, provider: "openai.chat" });
    expect(error.message).toMatch(/^openai\.chat could not be reached: .*ECONNREFUSED/);
  });

  it("a missing API key is not retryable", async () => {
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      const error = await failure(openai("gpt-4o-mini", { baseURL: `${server.url}/v1` }));
      expect(error).toBeInstanceOf(ModelRequestError);
      expect(error.message).toContain("OPENAI_API_KEY");
      expect(server.requests).toHaveLength(0);
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
    }
  });

  it("reads Retry-After headers in any case and form", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(retryAfterMs({ "Retry-After": "3" }, now)).toBe(3000);
    expect(retryAfterMs({ "retry-after": "0.5" }, now)).toBe(500);
    expect(retryAfterMs({ "retry-after-ms": "250", "retry-after": "9" }, now)).toBe(250);
    expect(retryAfterMs({ "retry-after": "Thu, 01 Jan 2026 00:00:04 GMT" }, now)).toBe(4000);
    expect(retryAfterMs({ "retry-after": "Wed, 31 Dec 2025 23:00:00 GMT" }, now)).toBe(0);
    expect(retryAfterMs({ "retry-after": "soon" }, now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });

  it("leaves Cairn errors and unknown errors as they are", () => {
    const cairn = new ModelRequestError("x", { provider: "p" });
    expect(modelError(cairn, "p")).toBe(cairn);
    const other = new RangeError("a bug");
    expect(modelError(other, "p")).toBe(other);
    const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    expect(modelError(reset, "p")).toBeInstanceOf(ModelUnavailableError);
  });
});

describe("modelFromEnvironment", () => {
  const fallback = () => new ScriptedModel({ name: "fallback" });
  it("chooses an OpenAI-compatible server, then OpenAI, then Anthropic, then the fallback", () => {
    expect(
      modelFromEnvironment({ OPENAI_BASE_URL: "http://localhost:11434/v1", OPENAI_MODEL: "llama3.2" }, fallback).name,
    ).toBe("openai.chat:llama3.2");
    expect(
      modelFromEnvironment(
        { OPENAI_BASE_URL: "http://x/v1", CAIRN_MODEL: "qwen", OPENAI_MODEL: "llama", OPENAI_API_KEY: "k" },
        fallback,
      ).name,
    ).toBe("openai.chat:qwen");
    expect(modelFromEnvironment({ OPENAI_API_KEY: "k", ANTHROPIC_API_KEY: "a" }, fallback).name).toBe(
      "openai.chat:gpt-4o-mini",
    );
    expect(modelFromEnvironment({ OPENAI_API_KEY: "k", CAIRN_MODEL: "gpt-5" }, fallback).name).toBe(
      "openai.chat:gpt-5",
    );
    expect(modelFromEnvironment({ ANTHROPIC_API_KEY: "a" }, fallback).name).toBe("anthropic.messages:claude-haiku-4-5");
    expect(modelFromEnvironment({ OPENAI_API_KEY: " " }, fallback).name).toBe("fallback");
    expect(() => modelFromEnvironment({ OPENAI_BASE_URL: "http://x/v1" }, fallback)).toThrow(/set CAIRN_MODEL/);
  });

  it("talks to the server OPENAI_BASE_URL names, without a key if none is set", async () => {
    server.script({ text: "local answer" });
    const model = modelFromEnvironment(
      { OPENAI_BASE_URL: `${server.url}/v1`, CAIRN_MODEL: "local-model" },
      fallback,
    ) as AiSdkModel;
    const response = await call(model, { prompt: "hi" });
    expect(response).toMatchObject({ text: "local answer", model: "local-model" });
    expect(server.requests).toHaveLength(1);
  });
});

describe("through the runtime", () => {
  const runtimes = new Runtimes();
  afterEach(() => runtimes.closeAll());

  const agent = defineAgent({
    name: "talker",
    tools: {},
    workflows: {
      async ask(ctx, { prompt }: { prompt: string }) {
        return ctx.llm.generate({ prompt });
      },
      async askWithin(ctx, { prompt, timeoutMs }: { prompt: string; timeoutMs: number }) {
        const response = await ctx.llm.chat({ prompt, timeoutMs });
        return response.text;
      },
    },
  });

  function runtime(format: "openai" | "anthropic" = "openai") {
    const options = { baseURL: `${server.url}/v1`, apiKey: "test" };
    return runtimes.make({
      agents: [agent],
      models: {
        default: format === "openai" ? openai("gpt-4o-mini", options) : anthropic("claude-haiku-4-5", options),
      },
      modelRetry: { initialIntervalMs: 10, jitter: 0 },
    });
  }

  async function run(rt: ReturnType<typeof runtime>, workflow: string, input: object) {
    const handle = await rt.run("talker", workflow, input);
    const done = await rt.waitFor(handle.id, { timeoutMs: 20_000 });
    const history = await rt.history(handle.id);
    return { done, steps: history.steps };
  }

  it("a 429 with Retry-After: 1 is retried after at least a second, then succeeds", async () => {
    server.script({ status: 429, retryAfterS: 1 }, { text: "after the wait" });
    const { done, steps } = await run(runtime(), "ask", { prompt: "q" });
    expect(done.state).toBe("COMPLETED");
    expect(done.output).toBe("after the wait");
    expect(server.requests).toHaveLength(2);
    const [first, second] = server.requests;
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(995);
    expect(steps).toHaveLength(1);
    expect(steps[0]).toMatchObject({ kind: "llm", name: "default", status: "completed" });
    expect(steps[0]?.attempts.map((a) => a.error?.code ?? "ok")).toEqual(["MODEL_UNAVAILABLE", "ok"]);
    expect(steps[0]?.attempts[0]?.error?.data).toMatchObject({ status: 429, retryAfterMs: 1000 });
    // Usage and the model's price are recorded from the answer.
    expect(steps[0]?.usage).toMatchObject({ inputTokens: 10, outputTokens: 3, modelCalls: 1 });
    expect(steps[0]?.usage?.costUsd).toBeGreaterThan(0);
  });

  it.each([
    ["openai", { status: 503 }],
    ["anthropic", { status: 529 }],
    ["openai", { kind: "cut" }],
    ["anthropic", { kind: "cut", clean: true }],
  ] as const)("%s: %j then success takes exactly two requests", async (format, fault) => {
    server.script(fault, { text: "second time lucky" });
    const { done, steps } = await run(runtime(format), "ask", { prompt: "q" });
    expect(done.state).toBe("COMPLETED");
    expect(done.output).toBe("second time lucky");
    expect(server.requests).toHaveLength(2);
    expect(steps[0]?.attempts).toHaveLength(2);
  });

  it.each(["openai", "anthropic"] as const)(
    "%s: a context overflow fails the run after one request (CONTEXT_OVERFLOW)",
    async (format) => {
      server.script({ kind: "context" }, { text: "never asked for" });
      const { done, steps } = await run(runtime(format), "ask", { prompt: "q" });
      expect(done.state).toBe("FAILED");
      expect(done.error).toMatchObject({ code: "CONTEXT_OVERFLOW", retryable: false });
      expect(done.error?.message).toContain("shorten the conversation");
      expect(server.requests).toHaveLength(1);
      expect(steps[0]).toMatchObject({ status: "failed" });
      expect(steps[0]?.attempts).toHaveLength(1);
    },
  );

  it("a plain 400 fails the run after one request (MODEL_REQUEST_REJECTED)", async () => {
    server.script({ status: 400, message: "Invalid value for 'temperature'" }, { text: "never asked for" });
    const { done } = await run(runtime(), "ask", { prompt: "q" });
    expect(done.state).toBe("FAILED");
    expect(done.error).toMatchObject({ code: "MODEL_REQUEST_REJECTED", data: { status: 400 } });
    expect(done.error?.message).toBe("openai.chat answered 400: Invalid value for 'temperature'");
    expect(server.requests).toHaveLength(1);
  });

  it("a stream slower than the call's timeoutMs is abandoned and retried", async () => {
    server.script({ kind: "slow", delayMs: 400, text: "too slow to wait for" }, { text: "quick" });
    const { done, steps } = await run(runtime(), "askWithin", { prompt: "q", timeoutMs: 200 });
    expect(done.state).toBe("COMPLETED");
    expect(done.output).toBe("quick");
    expect(server.requests).toHaveLength(2);
    expect(steps[0]?.attempts.map((a) => a.error?.code ?? "ok")).toEqual(["STEP_TIMEOUT", "ok"]);
  });
});
