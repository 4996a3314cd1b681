import { randomBytes } from "node:crypto";
import { OpenAPIHono } from "@hono/zod-openapi";
import { type AgentLike, toAgentDefinition } from "../agent/decorators.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
import type { LegacyLogger, Logger } from "../core/logger.ts";
import { toLogger } from "../core/safe-logger.ts";
import { consoleLogger } from "../runtime/console-logger.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { registerActionHandlers } from "./action-handlers.ts";
import {
  authenticate,
  LOCAL_ADMIN,
  type Principal,
  type ServerEnv,
  TokenAuthenticator,
  type TokenConfig,
} from "./auth.ts";
import { ApiError, sendError } from "./errors.ts";
import { registerEventHandlers } from "./event-handlers.ts";
import { DEFAULT_BODY_LIMIT_BYTES } from "./json-body.ts";
import { registerMetricsRoute, traceparentContext } from "./metrics-route.ts";
import { registerReadHandlers } from "./read-handlers.ts";
import { type GuardOptions, hostGuard, originGuard, securityHeaders } from "./request-guard.ts";
import { RunFeed } from "./run-feed.ts";
import { registerScheduleHandlers } from "./schedule-routes.ts";
import type { ServerContext } from "./server-context.ts";
import { staticFiles } from "./static-files.ts";

/**
 * `createServer`: the HTTP API (see routes.ts for the route contract) on a runtime, as a Hono app.
 * Nothing listens until `serve` (serve.ts) or any other Hono adapter is given its `fetch`.
 */

/** Options of {@link createServer}. */
export interface ServerOptions {
  /**
   * The bearer tokens (`loadTokens`). Without any, authentication is off: every request acts as
   * the local admin, and `serve` listens on loopback only. @default []
   */
  tokens?: readonly TokenConfig[];
  /**
   * Who every request is when no tokens are configured (an admin): the actor recorded for what
   * it does, and the decider of approvals (`cairn dev --as finance-lead`). Ignored with tokens.
   * @default "local"
   */
  localSubject?: string;
  /**
   * Without tokens, let each request name who it acts as with the `X-Cairn-As` (subject) and
   * `X-Cairn-Role` (role) headers: the dashboard's identity switcher of `cairn dev`, to approve as
   * the approver an agent declares or to see what a viewer sees. Ignored with tokens.
   * @default false
   */
  switchIdentity?: boolean;
  /**
   * The agents `GET /api/agents` lists. Runs of other agents can still be read and acted on.
   * @default the runtime's agents
   */
  agents?: readonly AgentLike[];
  /**
   * The file of the module each agent was loaded from, by agent name: recorded on the runs this
   * server starts (`meta.module`) so that `cairn resume` imports it again. `cairn dev` and `cairn
   * serve` pass the modules they loaded; a request can never name one. @default {}
   */
  agentModules?: Readonly<Record<string, string>>;
  /** Largest request body, in bytes (413 BODY_TOO_LARGE above). @default 1048576 (1 MiB) */
  bodyLimitBytes?: number;
  /**
   * Host names (`name` or `name:port`) the server answers to; others get 421 UNKNOWN_HOST.
   * @default without tokens: localhost, 127.0.0.1 and [::1] on the port the request came in on
   * (a DNS-rebinding page cannot reach the local admin); with tokens: any
   */
  allowedHosts?: readonly string[];
  /**
   * Origins besides the server's own whose pages may call the API (a proxy that rewrites Host,
   * for browsers that send no `Sec-Fetch-Site`). Pages of any other origin are refused (403
   * CROSS_ORIGIN). @default none
   */
  allowedOrigins?: readonly string[];
  /** A folder of static files (the dashboard) served outside /api, with index.html for unknown paths. @default none */
  staticRoot?: string;
  /**
   * Where unexpected failures are logged: a pino logger, `createConsoleLogger(…)`, or any
   * {@link Logger}; a {@link LegacyLogger} (`(message, fields)` methods) is still accepted and
   * adapted. Lines are cleaned of credentials first. @default warnings and errors to stderr
   */
  logger?: Logger | LegacyLogger;
  /** How often a run's event stream looks at the run (it also wakes on this process's transitions). @default 250 */
  pollIntervalMs?: number;
  /** How often the all-runs event stream looks for transitions made by other processes. @default 1000 */
  feedPollIntervalMs?: number;
  /** Heartbeat comments of the event streams. @default 15000 */
  heartbeatMs?: number;
  /** Runs one page of `GET /api/runs` looks at, at most (a selective filter may give short pages). @default 5000 */
  listScanLimit?: number;
  /**
   * A bearer token that may read `GET /metrics` and nothing else (a Prometheus scraper's). Without
   * it, `/metrics` needs an admin token (or nothing, when the server has no tokens). @default none
   */
  metricsToken?: string;
}

/** A server made by {@link createServer}. */
export interface CairnServer {
  /** The Hono app: `app.request(path, init)` serves a request in-process (tests). */
  readonly app: OpenAPIHono<ServerEnv>;
  /** `token` when tokens are configured, `none` when every request acts as the local admin. */
  readonly auth: "token" | "none";
  /** Who every request is when there are no tokens (`localSubject`, by default "local"). */
  readonly localSubject: string;
  /**
   * Serves one request (what an adapter such as `@hono/node-server` is given); `env` is the
   * adapter's (node-server's `{ incoming }` tells the Host check the port the request came in on).
   */
  fetch(request: Request, env?: unknown): Promise<Response>;
  /** Stops the all-runs event feed. Open streams end when their clients go. */
  close(): void;
}

/**
 * The HTTP API on `runtime`: runs, their records and acts on them, live events, the OpenAPI
 * document at /openapi.json, and optionally the dashboard's static files.
 *
 * @example
 * const runtime = new Runtime({ agents: [reportBuilder], backend: new SqliteBackend({ path: ".cairn/cairn.db" }) });
 * const server = createServer(runtime, { agents: [reportBuilder], tokens: loadTokens() });
 * const listening = await serve(server, { port: 4000 });
 * console.log(`listening on ${listening.url}`);
 */
export function createServer(runtime: Runtime, options: ServerOptions = {}): CairnServer {
  const logger = toLogger(options.logger ?? consoleLogger);
  const authenticator = new TokenAuthenticator(options.tokens ?? []);
  const bodyLimitBytes = bodyLimitOf(options);
  const localSubject = options.localSubject ?? LOCAL_ADMIN.subject;
  if (localSubject.trim() === "") throw new RangeError("localSubject must name someone (e.g. your user name)");
  const local: Principal = Object.freeze({ ...LOCAL_ADMIN, subject: localSubject });
  const feed = new RunFeed(runtime, { pollIntervalMs: options.feedPollIntervalMs ?? 1000, logger });
  const ctx: ServerContext = {
    runtime,
    agents: options.agents ? options.agents.map((a): AgentDefinition => toAgentDefinition(a)) : [...runtime.agents],
    agentModules: Object.freeze({ ...options.agentModules }),
    feed,
    boot: randomBytes(4).toString("hex"),
    logger,
    pollIntervalMs: options.pollIntervalMs ?? 250,
    heartbeatMs: options.heartbeatMs ?? 15_000,
    listScanLimit: options.listScanLimit ?? 5000,
    switchable: options.switchIdentity === true && !authenticator.enabled,
  };

  const app = newApp(logger);
  const guard: GuardOptions = {
    auth: authenticator.enabled ? "token" : "none",
    allowedHosts: options.allowedHosts,
    allowedOrigins: options.allowedOrigins,
  };
  app.use("*", securityHeaders, hostGuard(guard), originGuard(guard));
  app.use("/api/*", async (c, next) => {
    c.set("bodyLimitBytes", bodyLimitBytes);
    return next();
  });
  app.use("/api/*", authenticate(authenticator, local, ctx.switchable));
  app.use("/api/*", traceparentContext);

  registerReadHandlers(app, ctx);
  registerActionHandlers(app, ctx);
  registerEventHandlers(app, ctx);
  registerScheduleHandlers(app, ctx);
  documentApi(app);
  registerMetricsRoute(app, runtime, { authenticator, local, metricsToken: options.metricsToken });

  if (options.staticRoot !== undefined) {
    const [skipApi, file, index] = staticFiles(options.staticRoot);
    app.get("*", skipApi, file, index);
  }

  return {
    app,
    auth: authenticator.enabled ? "token" : "none",
    localSubject,
    fetch: async (request, env) => app.fetch(request, env),
    close: () => feed.close(),
  };
}

function bodyLimitOf(options: ServerOptions): number {
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  if (!(Number.isSafeInteger(bodyLimitBytes) && bodyLimitBytes > 0)) {
    throw new RangeError(
      `bodyLimitBytes must be a positive whole number of bytes (got ${String(options.bodyLimitBytes)})`,
    );
  }
  return bodyLimitBytes;
}

/** The app, with its errors answered as the API's error bodies (and a 500 logged). */
function newApp(logger: Logger): OpenAPIHono<ServerEnv> {
  const app = new OpenAPIHono<ServerEnv>({
    defaultHook: (result) => {
      if (!result.success) throw invalid(result.target, result.error.issues);
    },
  });
  app.onError((error, c) => {
    const response = sendError(c, error);
    if (response.status === 500) {
      logger.error({ error: error.stack ?? String(error) }, `${c.req.method} ${c.req.path} failed`);
    }
    return response;
  });
  app.notFound((c) =>
    sendError(
      c,
      new ApiError("NOT_FOUND", `no route ${c.req.method} ${c.req.path}; the routes are listed at /openapi.json`),
    ),
  );
  return app;
}

/** The OpenAPI document at /openapi.json, with the bearer scheme. */
function documentApi(app: OpenAPIHono<ServerEnv>): void {
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
  app.doc("/openapi.json", {
    openapi: "3.0.3",
    info: {
      title: "Cairn",
      version: "1",
      description:
        "The HTTP API of a Cairn runtime: runs, their transitions, steps, effects, waits and approvals, the acts on them, and live events.",
    },
  });
}

/** A validation failure of the request's `target` (json, query, param) as INVALID_INPUT. */
function invalid(target: string, issues: readonly { path: readonly PropertyKey[]; message: string; code?: string }[]) {
  const where = target === "json" ? "body" : target === "param" ? "path" : target;
  const details = issues.map((i) => ({ path: i.path.map(String), message: i.message }));
  const text = details
    .map((i) => {
      const hint =
        /^Unrecognized key/.test(i.message) && /"(by|actor)"/.test(i.message)
          ? " (who acts is taken from the bearer token, never from the body)"
          : "";
      return `${i.path.length ? i.path.join(".") : "(root)"}: ${i.message}${hint}`;
    })
    .join("; ");
  return new ApiError("INVALID_INPUT", `invalid request ${where}: ${text}`, { target: where, issues: details });
}
