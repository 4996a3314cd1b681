import { context, trace } from "@opentelemetry/api";
import { afterEach, describe, expect, it } from "vitest";
import { CairnClient } from "../src/client/cairn-client.ts";
import { type ListeningServer, serve } from "../src/server/serve.ts";
import { makeServer, TOKENS } from "./helpers/server-fixtures.ts";
import { installTracing } from "./tracing/otel-sdk.ts";

/**
 * `traceparent` from CairnClient to the server (W3C trace context): a run started over HTTP in
 * the caller's span is part of the caller's trace — its start span a child of the caller's, its
 * execution under that.
 */

let listening: ListeningServer | undefined;
let sdk: ReturnType<typeof installTracing> | undefined;
afterEach(async () => {
  await listening?.close();
  listening = undefined;
  await sdk?.uninstall();
});

describe("trace propagation over HTTP", () => {
  it("joins a run started by CairnClient to the caller's trace", async () => {
    sdk = installTracing();
    const s = makeServer();
    listening = await serve(s.server, { port: 0 });
    const client = new CairnClient({ baseUrl: listening.url, token: TOKENS.operator });
    const caller = trace.getTracer("test").startSpan("caller");
    const handle = await context.with(trace.setSpan(context.active(), caller), () =>
      client.run("desk", "quick", { n: 1 }),
    );
    caller.end();
    expect(await handle.result({ timeoutMs: 5000 })).toEqual({ n: 1 });
    const spans = sdk.exporter.getFinishedSpans();
    const start = spans.find((span) => span.name === "start desk.quick");
    const execution = spans.find((span) => span.name === "run desk.quick");
    expect(start?.spanContext().traceId).toBe(caller.spanContext().traceId);
    expect(start?.parentSpanContext?.spanId).toBe(caller.spanContext().spanId);
    expect(execution?.spanContext().traceId).toBe(caller.spanContext().traceId);
    expect(execution?.parentSpanContext?.spanId).toBe(start?.spanContext().spanId);
    // Stored with the run, for every later execution.
    const run = await s.runtime.getRun(handle.id);
    expect(run.meta.trace).toEqual({
      traceparent: `00-${caller.spanContext().traceId}-${start?.spanContext().spanId}-01`,
    });
  });

  it("starts a run in a trace of its own without a traceparent, and stores nothing without an SDK", async () => {
    const s = makeServer();
    const { body } = await s.call("POST", "/api/runs", {
      token: "operator",
      body: { agent: "desk", workflow: "quick", input: 1 },
      headers: { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" },
    });
    // No SDK registered: the API's no-op spans carry the caller's context on, and nothing else.
    expect(body.run.meta.trace).toEqual({ traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" });
    const plain = await s.call("POST", "/api/runs", {
      token: "operator",
      body: { agent: "desk", workflow: "quick", input: 2 },
    });
    expect(plain.body.run.meta.trace).toBeUndefined();
  });
});
