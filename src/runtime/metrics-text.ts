import type { RuntimeBackend } from "../backend/backend.ts";
import { PAUSED_REASONS, RUN_STATES } from "../core/run-state.ts";
import { processMetrics } from "../core/telemetry/metrics.ts";
import { type GaugeFamily, prometheusText } from "../core/telemetry/prometheus-text.ts";

export { PROMETHEUS_CONTENT_TYPE } from "../core/telemetry/prometheus-text.ts";

/**
 * Cairn's metrics in the Prometheus text format (what the HTTP server's `GET /metrics` serves),
 * with no OpenTelemetry SDK: the backend's counts read now — runs by state (`cairn_runs`), PAUSED
 * runs by reason (`cairn_runs_paused`), the backlog (`cairn_runs_backlog`) — then this process's
 * counters and histograms (runs started, ended and paused, step durations and attempts, effect
 * outcomes, model tokens and cost, lease takeovers, claim-to-start latency).
 *
 * @example
 * const body = await prometheusMetrics(runtime.backend); // serve with PROMETHEUS_CONTENT_TYPE
 */
export async function prometheusMetrics(backend?: RuntimeBackend): Promise<string> {
  return prometheusText(processMetrics, backend ? await backendGauges(backend) : []);
}

/** Runs by state, paused runs by reason and the backlog, from the backend (none when it cannot count). */
async function backendGauges(backend: RuntimeBackend): Promise<GaugeFamily[]> {
  const counts = await backend.countRuns?.(Date.now());
  if (!counts) return [];
  const byState = new Map<string, number>();
  const byReason = new Map<string, number>();
  for (const entry of counts.states) {
    byState.set(entry.state, (byState.get(entry.state) ?? 0) + entry.count);
    if (entry.pausedReason !== null) {
      byReason.set(entry.pausedReason, (byReason.get(entry.pausedReason) ?? 0) + entry.count);
    }
  }
  return [
    {
      name: "cairn_runs",
      help: "Runs in the backend, by state.",
      samples: RUN_STATES.map((state) => ({ labels: { state }, value: byState.get(state) ?? 0 })),
    },
    {
      name: "cairn_runs_paused",
      help: "PAUSED runs in the backend, by reason.",
      samples: PAUSED_REASONS.map((reason) => ({ labels: { reason }, value: byReason.get(reason) ?? 0 })),
    },
    {
      name: "cairn_runs_backlog",
      help: "Runs that are runnable and that no worker holds (no live lease).",
      samples: [{ labels: {}, value: counts.backlog }],
    },
  ];
}
