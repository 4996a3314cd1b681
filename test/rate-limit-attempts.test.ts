import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import { TestRuntime } from "../src/runtime/test-runtime.ts";
import { installTracing } from "./tracing/otel-sdk.ts";
import { spanTree } from "./tracing/span-tree.ts";

/**
 * A declared rate limit per attempt (DESIGN §4 *Rate limits*): a retry takes a slot of its own,
 * and the wait for a slot is a `rate limit <name>` span under the step's span, before the
 * attempt's.
 */

/** Tool `flaky` fails its first `failures` calls (retried at once), then answers; each call's time is kept. */
function flakyAgent(failures: { left: number }, calls: number[], now: () => number) {
  return defineAgent({
    name: "limited",
    tools: {
      flaky: defineTool({
        rateLimit: "api",
        retry: { maximumAttempts: 3, initialIntervalMs: 1 },
        run: () => {
          calls.push(now());
          if (failures.left-- > 0) throw new Error("service hiccup");
          return "ok";
        },
      }),
    },
    workflows: {
      async call(ctx, input: { times: number }) {
        for (let i = 0; i < input.times; i++) await ctx.tool("flaky", {});
        return "done";
      },
    },
  });
}

describe("a declared rate limit per attempt", () => {
  it("a retry takes a slot of its own: a 1 ms backoff still waits for the limit's next slot", async () => {
    const calls: number[] = [];
    const box: { t?: TestRuntime } = {};
    const agent = flakyAgent({ left: 1 }, calls, () => (box.t as TestRuntime).clock.now());
    const t = new TestRuntime({ agents: [agent], rateLimits: { api: { limit: 1, per: "10s" } } });
    box.t = t;
    await t.start();
    try {
      const start = t.clock.now();
      const run = await t.run(agent, "call", { times: 1 });
      expect(await run.result()).toBe("done");
      expect(calls.map((c) => c - start)).toEqual([0, 10_000]);
      const [step] = (await t.history(run.id)).steps;
      expect(step?.attempts.map((a) => a.startedAt - start)).toEqual([0, 10_000]);
      expect(step?.attempts[0]?.error?.message).toBe("service hiccup");
    } finally {
      await t.shutdown();
    }
  });
});

describe("the span of a wait for a slot", () => {
  let sdk: ReturnType<typeof installTracing>;
  beforeEach(() => {
    sdk = installTracing();
  });
  afterEach(async () => {
    await sdk.uninstall();
  });

  it("is `rate limit <name>` under the step's span, before its attempt, with the limit and the wait", async () => {
    const calls: number[] = [];
    const box: { t?: TestRuntime } = {};
    const agent = flakyAgent({ left: 0 }, calls, () => (box.t as TestRuntime).clock.now());
    const t = new TestRuntime({ agents: [agent], rateLimits: { api: { limit: 1, per: "1m" } } });
    box.t = t;
    await t.start();
    try {
      const run = await t.run(agent, "call", { times: 2 });
      expect(await run.result()).toBe("done");
      const spans = sdk.exporter.getFinishedSpans();
      const tree = spanTree(spans, (s: ReadableSpan) => s.name);
      const [first, second] = [tree.indexOf("    tool flaky"), tree.lastIndexOf("    tool flaky")];
      expect(tree.slice(first + 1, second)).toEqual(["      attempt 1"]);
      // Under the second step: its wait and its attempt (on the virtual clock the wait takes no
      // real time, so the two may be listed in either order).
      expect(tree.slice(second + 1).sort()).toEqual(["      attempt 1", "      rate limit api"]);
      const wait = spans.find((s) => s.name === "rate limit api");
      expect(wait?.attributes).toMatchObject({
        "cairn.rate_limit": "api",
        "cairn.rate_limit.wait_ms": 60_000,
        "cairn.step.index": 2,
        "cairn.attempt": 1,
      });
    } finally {
      await t.shutdown();
    }
  });
});
