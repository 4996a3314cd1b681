/**
 * The research agent (examples/research-agent) traced with OpenTelemetry: the SDK is registered
 * with an in-memory exporter, the agent answers one question on its scripted model, and the trace
 * is printed as a tree — the run's start, its execution, each model call and tool call as a step
 * with its attempts, the GenAI attributes on the model calls. Then the Prometheus text of this
 * process's metrics.
 *
 *   node --import tsx examples/tracing.ts
 *
 * To send the same spans to Jaeger, Tempo or Honeycomb, register an OTLP exporter instead of the
 * in-memory one (docs/guides/observability.md). In a project of your own, import from "cairn".
 */
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { prometheusMetrics, Runtime, silentLogger } from "../src/index.ts";
import { researcher, runtimeOptions } from "./research-agent/research.ts";

/** The attributes the tree shows. */
const SHOWN = [
  "cairn.run.id",
  "cairn.step.index",
  "cairn.attempt",
  "cairn.retry",
  "gen_ai.request.model",
  "gen_ai.usage.input_tokens",
  "gen_ai.usage.output_tokens",
  "gen_ai.response.finish_reasons",
];

// 1. The SDK, as an application registers it (NodeSDK does the same): a tracer provider with a
//    span processor and exporter, and a context manager so that spans nest across `await`.
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(provider);

// 2. A run of the research agent, inside a span of the caller's: the run joins its trace.
const runtime = new Runtime({ agents: [researcher], logger: silentLogger, ...runtimeOptions });
const question = "How does a durable runtime avoid paying twice after a crash?";
const caller = trace.getTracer("example").startSpan("answer a question");
const handle = await context.with(trace.setSpan(context.active(), caller), () =>
  runtime.run(researcher, "answer", { question }),
);
const output = await handle.result();
caller.end();
const metricsText = await prometheusMetrics(runtime.backend);
await runtime.shutdown();
await provider.forceFlush();

// 3. The trace as a tree.
const spans = exporter.getFinishedSpans();
console.log(`run ${handle.id}: ${JSON.stringify(output).slice(0, 100)}…\n`);
console.log(`trace ${caller.spanContext().traceId} (${spans.length} spans)`);
for (const line of tree(spans)) console.log(line);

console.log("\nthe metrics (what GET /metrics serves), without comments and buckets:\n");
console.log(
  metricsText
    .split("\n")
    .filter((line) => !line.startsWith("#") && !line.includes("_bucket"))
    .join("\n"),
);

/** The spans as indented lines: name, duration, and the attributes worth reading. */
function tree(all: readonly ReadableSpan[]): string[] {
  const byParent = new Map<string | undefined, ReadableSpan[]>();
  for (const span of all) {
    const parent = span.parentSpanContext?.spanId;
    byParent.set(parent, [...(byParent.get(parent) ?? []), span]);
  }
  const ids = new Set(all.map((s) => s.spanContext().spanId));
  const roots = all.filter((s) => !ids.has(s.parentSpanContext?.spanId ?? ""));
  const lines: string[] = [];
  const visit = (span: ReadableSpan, depth: number) => {
    const ms = span.duration[0] * 1e3 + span.duration[1] / 1e6;
    const shown = Object.entries(span.attributes)
      .filter(([key]) => SHOWN.includes(key))
      .map(([key, value]) => `${key}=${JSON.stringify(value)}`);
    lines.push(`${"  ".repeat(depth)}${span.name}  ${ms.toFixed(1)} ms  ${shown.join(" ")}`.trimEnd());
    const children = (byParent.get(span.spanContext().spanId) ?? []).sort(
      (a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1],
    );
    for (const child of children) visit(child, depth + 1);
  };
  for (const root of roots) visit(root, 0);
  return lines;
}
