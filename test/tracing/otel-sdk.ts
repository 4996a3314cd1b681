import { context, metrics, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

/**
 * An OpenTelemetry SDK registered globally for a test: spans go to an in-memory exporter (a
 * simple processor, so each is there as soon as it ends), with an AsyncLocalStorage context
 * manager as an application's NodeSDK would register. `uninstall` puts the API back to no-op.
 */
export function installTracing(): { exporter: InMemorySpanExporter; uninstall(): Promise<void> } {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const manager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(manager);
  trace.setGlobalTracerProvider(provider);
  return {
    exporter,
    async uninstall() {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** A metric reader a test collects from when it wants (no export interval). */
class TestReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

/** A MeterProvider registered globally, read on demand: `read()` gives each metric's data points. */
export function installMetrics(): {
  read(): Promise<Map<string, Array<{ attributes: Record<string, unknown>; value: unknown }>>>;
  uninstall(): Promise<void>;
} {
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  metrics.setGlobalMeterProvider(provider);
  return {
    async read() {
      const { resourceMetrics } = await reader.collect();
      const out = new Map<string, Array<{ attributes: Record<string, unknown>; value: unknown }>>();
      for (const scope of resourceMetrics.scopeMetrics) {
        for (const metric of scope.metrics) {
          const points = metric.dataPoints as Array<{ attributes: Record<string, unknown>; value: unknown }>;
          out.set(
            metric.descriptor.name,
            points.map((p) => ({ attributes: p.attributes, value: p.value })),
          );
        }
      }
      return out;
    },
    async uninstall() {
      await provider.shutdown();
      metrics.disable();
    },
  };
}
