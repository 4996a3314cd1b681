import { resolve } from "node:path";
import { serveStatic } from "@hono/node-server/serve-static";
import type { MiddlewareHandler } from "hono";
import type { ServerEnv } from "./auth.ts";

/**
 * The static files of the dashboard (`staticRoot`): every GET outside /api that names a file is
 * that file; any other is `index.html` (a single-page app routes it). Paths under /api and
 * /openapi.json never reach it. No token is needed for these files: the data is behind /api.
 */
export function staticFiles(
  root: string,
): [MiddlewareHandler<ServerEnv>, MiddlewareHandler<ServerEnv>, MiddlewareHandler<ServerEnv>] {
  const absolute = resolve(root);
  const skipApi: MiddlewareHandler<ServerEnv> = async (c, next) => {
    if (c.req.path === "/api" || c.req.path.startsWith("/api/")) return c.notFound();
    return next();
  };
  return [skipApi, serveStatic({ root: absolute }), serveStatic({ root: absolute, path: "index.html" })];
}
