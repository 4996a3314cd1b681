import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defineAgent, defineTool, Runtime, ScriptedModel, silentLogger } from "../src/index.ts";
import { untilState } from "./helpers/runtime-helpers.ts";
import { installMetrics, installTracing } from "./tracing/otel-sdk.ts";
import { spanTree } from "./tracing/span-tree.ts";

/**
 * Traces and metrics of a run through the OpenTelemetry API (DESIGN §7c), with the SDK's
 * in-memory exporter: the span tree of a run with a retried tool, a model call, a wait and a
 * child run, all in one trace; replayed steps emit no spans again.
 */

let sdk: ReturnType<typeof installTracing>;
let meter: ReturnType<typeof installMetrics>;
beforeEach(() => {
  sdk = installTracing();
  meter = installMetrics();
});
afterEach(async () => {
  await sdk.uninstall();
  await meter.uninstall();
});

let failures = 0;
const shop = defineAgent({
  name: "traced",
  tools: {
    quote: defineTool({
      retry: { maximumAttempts: 3, initialIntervalMs: 1 },
      run: async (_ctx, { item }: { item: string }) => {
        if (failures++ === 0) throw new Error("quote service hiccup");
        return { item, usd: 3 };
      },
    }),
  },
  workflows: {
    async child(_ctx, input: { n: number }) {
      return { doubled: input.n * 2 };
    },
    async parent(ctx, _input: null) {
      const quote = await ctx.tool("quote", { item: "pen" });
      const text = await ctx.llm.generate({ prompt: `describe ${quote.item}` });
      await ctx.waitForSignal("go");
      const child = await ctx.spawn("traced", "child", { n: 2 });
      const result = await child.result();
      return { text, result };
    },
  },
});

const attr = (s: ReadableSpan, key: string) => s.attributes[key];

describe("tracing a run", () => {
  it("gives one trace: executions, steps, attempts (the retry marked), GenAI attributes, the child", async () => {
    failures = 0;
    const model = new ScriptedModel({ replies: ["a fine pen"] });
    const rt = new Runtime({ agents: [shop], models: { default: model }, logger: silentLogger });
    try {
      const run = await rt.run(shop, "parent", null);
      // Signalled once the run paused on it: the run's second execution picks it up.
      await untilState(rt.backend, run.id, "PAUSED");
      await rt.signal(run.id, "go", null);
      expect(await run.result({ timeoutMs: 10_000 })).toMatchObject({ text: "a fine pen" });
      const spans = sdk.exporter.getFinishedSpans();
      expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
      const tree = spanTree(spans, (s) => {
        const extra = [attr(s, "cairn.retry") === true ? "retry" : "", attr(s, "cairn.step.status") ?? ""];
        return [s.name.replace(run.id, "<run>"), ...extra.filter(Boolean)].join(" ");
      });
      expect(tree.slice(0, 14)).toEqual([
        "start traced.parent",
        "  run traced.parent",
        "    tool quote completed",
        "      attempt 1",
        "      attempt 2 retry",
        "    llm default completed",
        "      attempt 1",
        "    wait signal:go waiting",
        "  run traced.parent",
        "    wait signal:go completed",
        "    child traced.child completed",
        "      attempt 1",
        "        run traced.child",
        "    wait result:<run>.4 waiting",
      ]);
      // The child ends either after the parent paused on it (a third execution of the parent) or
      // while it was pausing (it replays at once, in the same execution): the wait completes.
      expect(tree.slice(14).filter((line) => line !== "  run traced.parent")).toEqual([
        "    wait result:<run>.4 completed",
      ]);
      const named = (name: string) => spans.filter((s) => s.name === name);
      // Cairn's ids on every span of the run.
      const [execution] = named("run traced.parent");
      expect(execution?.attributes).toMatchObject({
        "cairn.run.id": run.id,
        "cairn.agent": "traced",
        "cairn.workflow": "parent",
        "cairn.run.resumed": false,
      });
      expect(typeof attr(execution as ReadableSpan, "cairn.worker.id")).toBe("string");
      const retried = named("attempt 2")[0] as ReadableSpan;
      expect(retried.attributes).toMatchObject({ "cairn.attempt": 2, "cairn.retry": true, "cairn.step.kind": "tool" });
      expect(retried.attributes["cairn.retry.cause"]).toBe("Error");
      const failed = named("attempt 1").find((s) => s.attributes["cairn.step.kind"] === "tool") as ReadableSpan;
      expect(failed.status.code).toBe(2);
      expect(failed.events.map((e) => e.name)).toEqual(["exception"]);
      // The GenAI semantic conventions on the model call's attempt.
      const modelAttempt = named("attempt 1").find((s) => s.attributes["cairn.step.kind"] === "llm") as ReadableSpan;
      expect(modelAttempt.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "scripted",
        "gen_ai.response.finish_reasons": ["stop"],
      });
      expect(modelAttempt.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
      expect(named("llm default")[0]?.attributes).toMatchObject({
        "cairn.step.index": 2,
        "cairn.step.name": "default",
      });
      // The child's execution: its own run id, linked to the parent's span that spawned it.
      const childRun = named("run traced.child")[0] as ReadableSpan;
      const spawnAttempt = spans.find((s) => s.spanContext().spanId === childRun.parentSpanContext?.spanId);
      expect(childRun.attributes).toMatchObject({ "cairn.run.id": `${run.id}.4`, "cairn.parent.run.id": run.id });
      expect(childRun.links.map((l) => l.context.spanId)).toEqual([spawnAttempt?.spanContext().spanId]);
      // Metrics through the same API.
      const data = await meter.read();
      const attempts = data.get("cairn.step.attempts") ?? [];
      const toolRetries = attempts.find(
        (p) => p.attributes["cairn.step.kind"] === "tool" && p.attributes["cairn.retry"],
      );
      expect(toolRetries?.value).toBe(1);
      const ended = data.get("cairn.runs.ended") ?? [];
      expect(ended.map((p) => [p.attributes["cairn.state"], p.value]).sort()).toEqual([["COMPLETED", 2]]);
      const tokens = data.get("gen_ai.client.token.usage") ?? [];
      expect(tokens.map((p) => p.attributes["gen_ai.token.type"]).sort()).toEqual(["input", "output"]);
    } finally {
      await rt.shutdown();
    }
  });
});
