import { createHash, timingSafeEqual } from "node:crypto";
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { context } from "@opentelemetry/api";
import type { MiddlewareHandler } from "hono";
import { requestTraceContext } from "../core/telemetry/trace-context.ts";
import { PROMETHEUS_CONTENT_TYPE, prometheusMetrics } from "../runtime/metrics-text.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { authenticate, type Principal, requires, type ServerEnv, type TokenAuthenticator } from "./auth.ts";
import { failure, security } from "./route-parts.ts";

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
  app.openapi(metricsRoute(metricsAccess(auth)), async (c) => {
    const text = await prometheusMetrics(runtime.backend);
    return c.text(text, 200, { "Content-Type": PROMETHEUS_CONTENT_TYPE, "Cache-Control": "no-store" });
  });
}

/** The route as /openapi.json documents it; `access` is its authentication (`metricsAccess`). */
function metricsRoute(access: MiddlewareHandler<ServerEnv>) {
  return createRoute({
    method: "get",
    path: "/metrics",
    tags: ["metrics"],
    summary: "Prometheus metrics: runs by state, paused runs by reason, the backlog, this process's counters",
    description:
      "The Prometheus text exposition format (version 0.0.4), read by a scraper: the backend's counts at each scrape, " +
      "then this process's counters and histograms. For an admin token, or the server's metrics token (which opens " +
      "nothing else); without tokens on the server, open to every request as the local admin.",
    security,
    middleware: [access] as const,
    responses: {
      200: {
        content: {
          "text/plain": {
            schema: z.string().openapi({
              example:
                '# HELP cairn_runs Runs in the backend, by state.\n# TYPE cairn_runs gauge\ncairn_runs{state="COMPLETED"} 3\n',
            }),
          },
        },
        description: "The metrics, as `text/plain; version=0.0.4; charset=utf-8`",
      },
      401: failure("UNAUTHENTICATED: no token, or one the server does not know"),
      403: failure("FORBIDDEN: a token that is neither an admin's nor the metrics token"),
    },
  });
}

/** The metrics token, or else authentication as for the API and the admin role. */
function metricsAccess(auth: {
  authenticator: TokenAuthenticator;
  local: Principal;
  metricsToken: string | undefined;
}): MiddlewareHandler<ServerEnv> {
  if (auth.metricsToken !== undefined && auth.metricsToken.trim().length < 16) {
    throw new RangeError("metricsToken must be at least 16 characters, as every token of the server");
  }
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
