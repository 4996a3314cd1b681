import type { Counter, Histogram, Labels, MetricRegistry } from "./metric-registry.ts";

/**
 * The Prometheus text exposition format (version 0.0.4) of this process's metrics and of gauges
 * read elsewhere (the backend's counts): `# HELP` and `# TYPE` lines per family, then one sample
 * a line; label values escaped (`\`, `"`, newline); histograms as cumulative `_bucket{le=…}`
 * series ending with `le="+Inf"`, then `_sum` and `_count`.
 */

/** The content type of the format, for the response's header. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** A gauge family: its samples given as they are now. */
export interface GaugeFamily {
  name: string;
  help: string;
  samples: ReadonlyArray<{ labels: Labels; value: number }>;
}

/** The exposition of `gauges` then of every metric of `registry`. */
export function prometheusText(registry: MetricRegistry, gauges: readonly GaugeFamily[] = []): string {
  const lines: string[] = [];
  for (const gauge of gauges) {
    header(lines, gauge.name, gauge.help, "gauge");
    for (const sample of gauge.samples) lines.push(`${gauge.name}${labelText(sample.labels)} ${num(sample.value)}`);
  }
  for (const metric of registry.metrics()) {
    if ("buckets" in metric) histogramLines(lines, metric);
    else counterLines(lines, metric);
  }
  return `${lines.join("\n")}\n`;
}

function counterLines(lines: string[], counter: Counter): void {
  header(lines, counter.name, counter.help, "counter");
  for (const series of counter.series()) lines.push(`${counter.name}${labelText(series.labels)} ${num(series.value)}`);
}

function histogramLines(lines: string[], histogram: Histogram): void {
  header(lines, histogram.name, histogram.help, "histogram");
  for (const series of histogram.series()) {
    let cumulative = 0;
    histogram.buckets.forEach((bound, i) => {
      cumulative += series.counts[i] ?? 0;
      lines.push(`${histogram.name}_bucket${labelText(series.labels, num(bound))} ${cumulative}`);
    });
    lines.push(`${histogram.name}_bucket${labelText(series.labels, "+Inf")} ${series.count}`);
    lines.push(`${histogram.name}_sum${labelText(series.labels)} ${num(series.sum)}`);
    lines.push(`${histogram.name}_count${labelText(series.labels)} ${series.count}`);
  }
}

function header(lines: string[], name: string, help: string, type: string): void {
  lines.push(`# HELP ${name} ${help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`);
  lines.push(`# TYPE ${name} ${type}`);
}

/** `{a="x",b="y"}` (with `le` last when given), or nothing without labels. */
function labelText(labels: Labels, le?: string): string {
  const parts = Object.entries(labels).map(([name, value]) => `${name}="${escapeLabel(value)}"`);
  if (le !== undefined) parts.push(`le="${le}"`);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

/** A label value as the format writes it: backslash, double quote and newline escaped. */
export function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** A sample value: Go's float text (`+Inf`, `-Inf`, `NaN`), integers without a fraction. */
function num(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(value);
}
