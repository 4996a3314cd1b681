import { context, ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base";

/**
 * The OpenTelemetry SDK as an application registers it (a tracer provider with a batch processor,
 * an AsyncLocalStorage context manager), exporting to nowhere: the rows "tracing on" of
 * bench/step-overhead.ts measure what recording Cairn's spans costs a step, not an exporter's I/O.
 */

/** An exporter that drops every span at once. */
const discard: SpanExporter = {
  export: (_spans, done) => done({ code: 0 }),
  shutdown: async () => {},
};

/** Runs `measure` with the SDK registered, then puts the API back to no-op. */
export async function withTracing<T>(measure: () => Promise<T>): Promise<T> {
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(discard)] });
  const manager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(manager);
  trace.setGlobalTracerProvider(provider);
  try {
    return await measure();
  } finally {
    await provider.shutdown();
    trace.disable();
    context.disable();
  }
}

/**
 * Runs `measure` with only the SDK's context manager registered and in use (AsyncLocalStorage, as
 * in an application whose SDK or instrumentations have entered a context), and no tracer provider:
 * what the context manager costs a step by itself, without a span — a floor of the rows "tracing on".
 */
export async function withContextManager<T>(measure: () => Promise<T>): Promise<T> {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  try {
    return await context.with(ROOT_CONTEXT, measure);
  } finally {
    context.disable();
  }
}
