import { describe, expect, it } from "vitest";
import { MetricRegistry } from "./metric-registry.ts";
import { escapeLabel, prometheusText } from "./prometheus-text.ts";

describe("the Prometheus text exposition", () => {
  it("writes HELP and TYPE per family, escaped labels, cumulative buckets, _sum and _count", () => {
    const registry = new MetricRegistry();
    const runs = registry.counter("x_runs_total", "Runs.\nSecond line \\ here.");
    runs.add(2, { agent: 'a"b\\c\nd' });
    runs.add(1, { agent: 'a"b\\c\nd' });
    const latency = registry.histogram("x_seconds", "Latency.", [0.1, 1]);
    latency.record(0.05, { kind: "tool" });
    latency.record(0.5, { kind: "tool" });
    latency.record(7, { kind: "tool" });
    const text = prometheusText(registry, [
      { name: "x_backlog", help: "Backlog.", samples: [{ labels: {}, value: 4 }] },
    ]);
    expect(text).toBe(
      [
        "# HELP x_backlog Backlog.",
        "# TYPE x_backlog gauge",
        "x_backlog 4",
        "# HELP x_runs_total Runs.\\nSecond line \\\\ here.",
        "# TYPE x_runs_total counter",
        'x_runs_total{agent="a\\"b\\\\c\\nd"} 3',
        "# HELP x_seconds Latency.",
        "# TYPE x_seconds histogram",
        'x_seconds_bucket{kind="tool",le="0.1"} 1',
        'x_seconds_bucket{kind="tool",le="1"} 2',
        'x_seconds_bucket{kind="tool",le="+Inf"} 3',
        'x_seconds_sum{kind="tool"} 7.55',
        'x_seconds_count{kind="tool"} 3',
        "",
      ].join("\n"),
    );
  });

  it("escapes exactly backslash, double quote and newline in label values", () => {
    expect(escapeLabel("plain-1 ok")).toBe("plain-1 ok");
    expect(escapeLabel('\\"\n')).toBe('\\\\\\"\\n');
  });
});
