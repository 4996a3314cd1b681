import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import { InMemoryBackend } from "../src/backend/memory/memory-backend.ts";
import { InvalidDefinitionError, ModelUnavailableError } from "../src/core/errors.ts";
import type { RunEvent } from "../src/core/events.ts";
import type { LogFields, Logger } from "../src/core/logger.ts";
import type { ModelProvider } from "../src/core/model-provider.ts";
import type { RateLimitDeclaration } from "../src/core/rate-limits.ts";
import { ScriptedModel } from "../src/llm/scripted-model.ts";
import type { RuntimeOptions } from "../src/runtime/runtime-options.ts";
import { TestRuntime } from "../src/runtime/test-runtime.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { Runtimes, until } from "./helpers/runtime-helpers.ts";

const MINUTE = 60_000;
const root = mkdtempSync(join(tmpdir(), "cairn-rate-limits-"));
const runtimes = new Runtimes();
afterAll(async () => {
  await runtimes.closeAll();
  rmSync(root, { recursive: true, force: true });
});

/** A logger that keeps its info and warn lines (message and fields). */
function recordingLogger(lines: { level: string; message: string; fields: LogFields }[]): Logger {
  const make = (bound: LogFields): Logger => {
    const at =
      (level: string) =>
      (fields: LogFields | string, message?: string): void => {
        if (typeof fields === "string") lines.push({ level, message: fields, fields: bound });
        else lines.push({ level, message: message ?? "", fields: { ...bound, ...fields } });
      };
    return {
      trace: () => {},
      debug: () => {},
      info: at("info"),
      warn: at("warn"),
      error: at("error"),
      fatal: at("fatal"),
      child: (bindings) => make({ ...bound, ...bindings }),
    } as Logger;
  };
  return make({});
}

/**
 * An agent whose tool `search` is under `rateLimit` and records the time (`now()`) of each call;
 * `many` calls it `times` times in a row, `twice` calls it, waits for signal "go", calls it again.
 */
function searcher(rateLimit: RateLimitDeclaration, calls: number[], now: () => number) {
  return defineAgent({
    name: "researcher",
    tools: {
      search: defineTool({
        rateLimit,
        run: (_ctx, { q }: { q: string }) => {
          calls.push(now());
          return `found ${q}`;
        },
      }),
    },
    workflows: {
      async many(ctx, input: { times: number }) {
        for (let i = 0; i < input.times; i++) await ctx.tool("search", { q: `q${i}` });
        return input.times;
      },
      async twice(ctx, _input: null) {
        await ctx.tool("search", { q: "first" });
        await ctx.waitForSignal("go");
        return ctx.tool("search", { q: "second" });
      },
    },
  });
}

/** At most `limit` of `times` in any window of `periodMs` starting at one of them. */
function mostInAWindow(times: readonly number[], periodMs: number): number {
  return Math.max(...times.map((t) => times.filter((u) => u >= t && u < t + periodMs).length));
}

describe("rate limits declared on tools (virtual clock)", () => {
  it("a named limit of 2 per minute spaces 6 calls 30 s apart on the virtual clock, logged and sent as events", async () => {
    const calls: number[] = [];
    const lines: { level: string; message: string; fields: LogFields }[] = [];
    const box: { t?: TestRuntime } = {};
    const agent = searcher("search-api", calls, () => (box.t as TestRuntime).clock.now());
    const t = new TestRuntime({
      agents: [agent],
      rateLimits: { "search-api": { limit: 2, per: "1m" } },
      logger: recordingLogger(lines),
    });
    box.t = t;
    await t.start();
    try {
      const start = t.clock.now();
      const handle = await t.run(agent, "many", { times: 6 });
      const events: RunEvent[] = [];
      const collecting = (async () => {
        for await (const event of t.events(handle.id)) events.push(event);
      })();
      expect(await handle.result()).toBe(6);
      await collecting;
      // Slots 60 s / 2 apart: the sixth call starts 2.5 virtual minutes after the first.
      expect(calls.map((c) => c - start)).toEqual([0, 0.5, 1, 1.5, 2, 2.5].map((m) => m * MINUTE));
      expect(mostInAWindow(calls, MINUTE)).toBe(2);
      const waits = lines.filter((l) => l.level === "info" && l.fields.rateLimit === "search-api");
      expect(waits).toHaveLength(5);
      expect(waits[0]?.fields).toMatchObject({ waitMs: 30_000, step: 2, runId: handle.id });
      expect(waits[0]?.message).toMatch(/rate limit "search-api" \(2 per 1m\) reached; attempt 1 waits 30000 ms/);
      const limited = events.filter((e) => e.type === "step.rate_limited");
      expect(limited.map((e) => e.type === "step.rate_limited" && [e.seq, e.waitMs, e.rateLimit])).toEqual(
        [2, 3, 4, 5, 6].map((seq) => [seq, 30_000, "search-api"]),
      );
      // The attempt starts once its slot came: its start record says when it ran.
      const steps = (await t.history(handle.id)).steps;
      expect(steps.map((s) => (s.attempts[0]?.startedAt ?? 0) - start)).toEqual(calls.map((c) => c - start));
    } finally {
      await t.shutdown();
    }
  });

  it("a limit of the tool's own is kept under tool:<agent>.<tool>; a replayed call takes no slot", async () => {
    const calls: number[] = [];
    const lines: { level: string; message: string; fields: LogFields }[] = [];
    const box: { t?: TestRuntime } = {};
    const agent = searcher({ limit: 1, per: "1h" }, calls, () => (box.t as TestRuntime).clock.now());
    const t = new TestRuntime({ agents: [agent], logger: recordingLogger(lines) });
    box.t = t;
    await t.start();
    try {
      const start = t.clock.now();
      const handle = await t.run(agent, "twice", null);
      expect((await t.settle(handle.id)).state).toBe("PAUSED");
      await t.signal(handle.id, "go", null);
      expect(await handle.result()).toBe("found second");
      // The resumed execution replays the first call from the journal: had it taken a slot, the
      // second call would have waited two hours.
      expect(calls.map((c) => c - start)).toEqual([0, 60 * MINUTE]);
      expect(lines.filter((l) => l.fields.rateLimit !== undefined).map((l) => l.fields.rateLimit)).toEqual([
        "tool:researcher.search",
      ]);
    } finally {
      await t.shutdown();
    }
  });

  it("a 429 with Retry-After on a model step holds the model's limit for every run, not only the retry", async () => {
    const box: { t?: TestRuntime } = {};
    const calls: { at: number; prompt: string }[] = [];
    let failures = 1;
    const flaky: ModelProvider = {
      name: "flaky",
      rateLimit: "openai",
      async generate(request) {
        calls.push({ at: (box.t as TestRuntime).clock.now(), prompt: String(request.prompt) });
        if (request.prompt === "a" && failures-- > 0) {
          throw new ModelUnavailableError("429 Too Many Requests", {
            provider: "flaky",
            status: 429,
            retryAfterMs: 30_000,
          });
        }
        return { text: "ok", finishReason: "stop", usage: { inputTokens: 1, outputTokens: 1 }, model: "flaky" };
      },
    };
    const asker = defineAgent({
      name: "asker",
      tools: {},
      workflows: {
        async ask(ctx, input: { prompt: string }) {
          return ctx.llm.generate({ prompt: input.prompt });
        },
      },
    });
    const t = new TestRuntime({
      agents: [asker],
      backend: new InMemoryBackend(),
      models: { default: flaky },
      rateLimits: { openai: { limit: 100, per: "1s" } },
    });
    box.t = t;
    await t.start();
    try {
      const first = await t.run(asker, "ask", { prompt: "a" });
      // Its retry waits 30 s, paused on a durable timer (awaiting_retry); the clock stays put.
      expect((await t.settle(first.id, { skipTimers: false })).pausedReason).toBe("awaiting_retry");
      const failedAt = calls[0]?.at as number;
      const second = await t.run(asker, "ask", { prompt: "b" });
      expect(await second.result()).toBe("ok");
      // Run b never failed, yet its call waited for the hold the 429 of run a put on the limit.
      expect((calls[1]?.at as number) - failedAt).toBe(30_000);
      expect(calls[1]?.prompt).toBe("b");
      expect((await t.settle(first.id)).state).toBe("COMPLETED");
      expect(calls.map((c) => c.prompt)).toEqual(["a", "b", "a"]);
    } finally {
      await t.shutdown();
    }
  });
});

describe("rate limits declared on a model", () => {
  it("spaces the calls of a model with a limit of its own", async () => {
    const box: { t?: TestRuntime } = {};
    const model = new ScriptedModel({ replies: ["one"], rateLimit: { limit: 3, per: "1m" } });
    const calls: number[] = [];
    const writer = defineAgent({
      name: "writer",
      tools: {},
      workflows: {
        async draft(ctx, _input: null) {
          for (let i = 0; i < 4; i++) {
            await ctx.llm.generate({ prompt: `part ${i}` });
            calls.push((box.t as TestRuntime).clock.now());
          }
          return calls.length;
        },
      },
    });
    const t = new TestRuntime({ agents: [writer], models: { default: model } });
    box.t = t;
    await t.start();
    try {
      const start = t.clock.now();
      expect(await (await t.run(writer, "draft", null)).result()).toBe(4);
      expect(calls.map((c) => c - start)).toEqual([0, 20_000, 40_000, 60_000]);
      expect(model.calls).toBe(4);
    } finally {
      await t.shutdown();
    }
  });
});

describe("bad rate limit declarations", () => {
  const tool = (rateLimit: unknown) =>
    defineAgent({
      name: "researcher",
      tools: { search: defineTool({ rateLimit: rateLimit as RateLimitDeclaration, run: () => "x" }) },
      workflows: {
        async go() {
          return null;
        },
      },
    });

  const refused = (make: () => unknown): InvalidDefinitionError => {
    try {
      make();
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidDefinitionError);
      expect((error as InvalidDefinitionError).code).toBe("INVALID_DEFINITION");
      return error as InvalidDefinitionError;
    }
    throw new Error("not refused");
  };

  it("a limit of 0 or a bad period is refused when the agent is defined, naming the tool", () => {
    expect(refused(() => tool({ limit: 0, per: "1s" })).message).toMatch(
      /^tool "search" of agent "researcher": rate limit `limit` must be a whole number of calls above 0 \(got 0\); e\.g\. \{ limit: 20, per: "1s" \}/,
    );
    expect(refused(() => tool({ limit: 5, per: "soon" })).message).toMatch(
      /^tool "search" of agent "researcher": rate limit `per` must be a duration such as .*got "soon"/,
    );
    expect(refused(() => tool("")).message).toMatch(/tool "search" of agent "researcher": rateLimit is an empty name/);
  });

  it("a name the runtime does not declare is refused when the runtime is made, saying how to declare it", () => {
    const options = (extra: Partial<RuntimeOptions>): RuntimeOptions => ({ agents: [tool("search-api")], ...extra });
    expect(refused(() => new TestRuntime(options({}))).message).toMatch(
      /^tool "search" of agent "researcher" declares rateLimit "search-api", which the runtime does not declare \(its rateLimits: none\); declare it: new Runtime\(\{ rateLimits: \{ "search-api": \{ limit: 60, per: "1m" \} \} \}\)/,
    );
    expect(
      refused(() => new TestRuntime(options({ rateLimits: { "search-api": { limit: 20, per: 0 } } }))).message,
    ).toMatch(/^rate limit "search-api" of the runtime: rate limit `per` must be a duration/);
    const model = new ScriptedModel({ name: "gpt", rateLimit: "openai" });
    expect(
      refused(() => new TestRuntime({ agents: [tool({ limit: 1, per: "1s" })], models: { default: model } })).message,
    ).toMatch(/^model "default" \(gpt\) declares rateLimit "openai", which the runtime does not declare/);
    // Declared: accepted.
    expect(() => new TestRuntime(options({ rateLimits: { "search-api": { limit: 20, per: "1s" } } }))).not.toThrow();
  });
});

describe("a declared rate limit's wait in process", () => {
  it("stops when the run is cancelled: the waiting call never runs", async () => {
    const calls: number[] = [];
    const lines: { level: string; message: string; fields: LogFields }[] = [];
    const agent = searcher("slow-api", calls, Date.now);
    const runtime = runtimes.make({
      agents: [agent],
      rateLimits: { "slow-api": { limit: 1, per: "1h" } },
      logger: recordingLogger(lines),
    });
    await runtime.start();
    const handle = await runtime.run(agent, "many", { times: 2 });
    await until(() => lines.some((l) => l.fields.rateLimit === "slow-api" && l.fields.waitMs !== undefined), {
      what: "the second call to wait for its slot",
    });
    const run = await runtime.getRun(handle.id);
    expect(run.state).toBe("RUNNING");
    await runtime.cancel(handle.id, { reason: "enough" });
    const ended = await runtime.waitFor(handle.id, { timeoutMs: 5000 });
    expect(ended.state).toBe("CANCELLED");
    expect(calls).toHaveLength(1);
    // The waiting attempt wrote nothing: the journal has the first call only.
    expect((await runtime.history(handle.id)).steps.filter((s) => s.kind === "tool")).toHaveLength(1);
  });
});

describe("a declared rate limit's wait at shutdown", () => {
  it("lasts through the grace period, then the run is INTERRUPTED without the call", async () => {
    const calls: number[] = [];
    const lines: { level: string; message: string; fields: LogFields }[] = [];
    const agent = searcher("slow-api", calls, Date.now);
    const backend = new InMemoryBackend();
    const runtime = runtimes.make({
      agents: [agent],
      backend,
      rateLimits: { "slow-api": { limit: 1, per: "1h" } },
      logger: recordingLogger(lines),
    });
    await runtime.start();
    const handle = await runtime.run(agent, "many", { times: 2 });
    await until(() => lines.some((l) => l.fields.rateLimit === "slow-api" && l.fields.waitMs !== undefined), {
      what: "the second call to wait for its slot",
    });
    await runtime.shutdown({ graceMs: 50 });
    expect((await backend.getRun(handle.id))?.state).toBe("INTERRUPTED");
    expect(calls).toHaveLength(1);
  });
});

describe("declared rate limits on SQLite", () => {
  it("spaces the calls of a named limit through the SQLite backend's rate_limits table", async () => {
    const calls: number[] = [];
    const box: { t?: TestRuntime } = {};
    const agent = searcher("search-api", calls, () => (box.t as TestRuntime).clock.now());
    const t = new TestRuntime({
      agents: [agent],
      backend: new SqliteBackend({ path: join(root, "limits.db") }),
      rateLimits: { "search-api": { limit: 2, per: "1m" } },
    });
    box.t = t;
    await t.start();
    try {
      const start = t.clock.now();
      expect(await (await t.run(agent, "many", { times: 3 })).result()).toBe(3);
      expect(calls.map((c) => c - start)).toEqual([0, 30_000, 60_000]);
    } finally {
      await t.shutdown();
    }
  });
});
