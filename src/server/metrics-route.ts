import { createHash, timingSafeEqual } from "node:crypto";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { context } from "@opentelemetry/api";
import type { MiddlewareHandler } from "hono";
import { PAUSED_REASONS, RUN_STATES } from "../core/run-state.ts";
import { processMetrics } from "../core/telemetry/metrics.ts";
import { type GaugeFamily, PROMETHEUS_CONTENT_TYPE, prometheusText } from "../core/telemetry/prometheus-text.ts";
import { requestTraceContext } from "../core/telemetry/trace-context.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { authenticate, type Principal, requires, type ServerEnv, type TokenAuthenticator } from "./auth.ts";

/**
 * `GET /metrics`: the Prometheus text format (DESIGN §7c), with no OpenTelemetry SDK needed —
 * the backend's counts (runs by state, paused runs by reason, the backlog) read on each scrape,
 * then this process's own counters and histograms. For an admin token, or the server's
 * `metricsToken` (a scraper's credential that can do nothing else).
 */
export function registerMetricsRoute(
  app: OpenAPIHono<ServerEnv>,
  runtime: Runtime,
  auth: { authenticator: TokenAuthenticator; local: Principal; metricsToken: string | undefined },
): void {
  app.get("/metrics", metricsAccess(auth), async (c) => {
    const text = prometheusText(processMetrics, await backendGauges(runtime));
    return c.body(text, 200, { "Content-Type": PROMETHEUS_CONTENT_TYPE, "Cache-Control": "no-store" });
  });
}

/** The metrics token, or else authentication as for the API and the admin role. */
function metricsAccess(auth: {
  authenticator: TokenAuthenticator;
  local: Principal;
  metricsToken: string | undefined;
}): MiddlewareHandler<ServerEnv> {
  const wanted = auth.metricsToken === undefined ? undefined : digest(auth.metricsToken);
  const authenticated = authenticate(auth.authenticator, auth.local);
  const admin = requires("administer");
  return async (c, next) => {
    const presented = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "")?.[1];
    if (wanted && presented !== undefined && timingSafeEqual(wanted, digest(presented))) return next();
    return authenticated(c, async () => {
      await admin(c, next);
    });
  };
}

/** Runs by state, paused runs by reason and the backlog, from the backend (none when it cannot count). */
async function backendGauges(runtime: Runtime): Promise<GaugeFamily[]> {
  const counts = await runtime.backend.countRuns?.(Date.now());
  if (!counts) return [];
  const byState = new Map<string, number>();
  const byReason = new Map<string, number>();
  for (const entry of counts.states) {
    byState.set(entry.state, (byState.get(entry.state) ?? 0) + entry.count);
    if (entry.pausedReason !== null)
      byReason.set(entry.pausedReason, (byReason.get(entry.pausedReason) ?? 0) + entry.count);
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

/**
 * Runs the rest of the request in the trace its `traceparent` header names (W3C trace context):
 * a run it starts joins the caller's trace. Needs a context manager (an SDK's) to carry it.
 */
export const traceparentContext: MiddlewareHandler<ServerEnv> = async (c, next) => {
  const traceparent = c.req.header("traceparent");
  if (traceparent === undefined) return next();
  return context.with(requestTraceContext(traceparent, c.req.header("tracestate")), next);
};

function digest(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}
