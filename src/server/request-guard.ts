import type { MiddlewareHandler } from "hono";
import { secureHeaders } from "hono/secure-headers";
import type { ServerEnv } from "./auth.ts";
import { ApiError } from "./errors.ts";

/**
 * What a browser may not do to a Cairn server from another site:
 * - **Host** (DNS rebinding): a page on `evil.example` whose name is made to resolve to 127.0.0.1
 *   is same-origin with the server in the browser's eyes, and could read everything and act as
 *   the local admin of a server without tokens. Without tokens, only loopback names (localhost,
 *   127.0.0.1, [::1]) on the port the request came in on are answered (421 UNKNOWN_HOST
 *   otherwise). With tokens, any name is (behind a proxy the server has many): a rebinding page
 *   has no token, since the dashboard keeps it in the real origin's session storage; pin names
 *   with `allowedHosts` if you like.
 * - **Origin** (cross-site requests): a state change (any method but GET, HEAD, OPTIONS) and any
 *   /api request from a browser is refused (403 CROSS_ORIGIN) unless it comes from the server's
 *   own origin: `Sec-Fetch-Site: same-origin` when the browser sends it (GET may also be `none`,
 *   a typed address), else an `Origin` whose host is the request's Host (or one of
 *   `allowedOrigins`). A request with neither header is not from a browser page (curl, the CLI,
 *   `CairnClient`) and passes: these checks are about pages acting with the user's ambient
 *   access, not about callers who could send any header anyway.
 * - **Headers** on every response: a Content-Security-Policy that lets the dashboard (Vite's build:
 *   one module script and one stylesheet of its own, Preact setting styles through the DOM) load
 *   its own files and call its own origin only, never be framed (`frame-ancestors 'none'`,
 *   `X-Frame-Options: DENY`), `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`,
 *   and `Cross-Origin-Resource-Policy: same-origin`, so no other site can even embed a response.
 */

/** Options of {@link hostGuard} and {@link originGuard} (from `ServerOptions`). */
export interface GuardOptions {
  /** Whether the server has tokens. */
  auth: "token" | "none";
  /** Host names (`name` or `name:port`) answered; replaces the default (see the file comment). */
  allowedHosts?: readonly string[] | undefined;
  /** Origins (`https://ops.example.com`) whose pages may call the API besides the server's own. */
  allowedOrigins?: readonly string[] | undefined;
}

/** The loopback names a server without tokens answers to. */
export const LOOPBACK_HOSTS: readonly string[] = ["localhost", "127.0.0.1", "[::1]"];

/** Refuses requests whose Host the server does not answer to (421 UNKNOWN_HOST). */
export function hostGuard(options: GuardOptions): MiddlewareHandler<ServerEnv> {
  const allowed = options.allowedHosts?.map(parseHost);
  if (allowed?.some((a) => a === undefined)) {
    throw new RangeError(`allowedHosts must be host names, optionally with a port (got ${options.allowedHosts})`);
  }
  if (options.auth === "token" && allowed === undefined) return async (_c, next) => next();
  return async (c, next) => {
    const given = c.req.header("host") ?? new URL(c.req.url).host;
    const host = parseHost(given);
    const port = localPort(c.env);
    const ok =
      host !== undefined &&
      (allowed === undefined
        ? LOOPBACK_HOSTS.includes(host.name) && (port === undefined || (host.port ?? 80) === port)
        : allowed.some((a) => a?.name === host.name && (a.port === undefined || a.port === host.port)));
    if (!ok) {
      const names = allowed === undefined ? LOOPBACK_HOSTS.join(", ") : (options.allowedHosts ?? []).join(", ");
      throw new ApiError(
        "UNKNOWN_HOST",
        `this server does not answer to the host "${given}" (it answers to ${names}${allowed === undefined && port !== undefined ? ` on port ${port}` : ""})${
          options.auth === "none"
            ? ": it has no tokens, so a page on another name could act as its local admin. Open it as http://127.0.0.1:<port>/, or configure tokens"
            : ": add the name to allowedHosts"
        }`,
        { host: given },
      );
    }
    return next();
  };
}

/** Refuses cross-origin state changes and cross-site API requests from browsers (403 CROSS_ORIGIN). */
export function originGuard(options: GuardOptions): MiddlewareHandler<ServerEnv> {
  const extra = new Set((options.allowedOrigins ?? []).map((o) => new URL(o).origin));
  return async (c, next) => {
    const unsafe = !SAFE_METHODS.has(c.req.method);
    const api = c.req.path === "/api" || c.req.path.startsWith("/api/");
    if (!unsafe && !api) return next();
    const site = c.req.header("sec-fetch-site");
    const origin = c.req.header("origin");
    let refused: string | undefined;
    if (site !== undefined) {
      // The browser's own word (pages cannot set it); trusted over Origin, which a proxy that
      // rewrites Host would make look foreign.
      if (!(site === "same-origin" || (!unsafe && site === "none"))) refused = `Sec-Fetch-Site: ${site}`;
    } else if (origin !== undefined && !isOwnOrigin(origin, c.req.header("host") ?? new URL(c.req.url).host, extra)) {
      refused = `Origin: ${origin}`;
    }
    if (refused !== undefined) {
      throw new ApiError(
        "CROSS_ORIGIN",
        `a page of another origin may not call this server's API (${refused}); use the dashboard this server serves${options.auth === "token" ? ", or add the page's origin to allowedOrigins" : ""}`,
        { origin: origin ?? null, site: site ?? null },
      );
    }
    return next();
  };
}

/** The headers every response carries (see the file comment). */
export const securityHeaders: MiddlewareHandler<ServerEnv> = secureHeaders({
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    imgSrc: ["'self'", "data:"],
    connectSrc: ["'self'"],
    fontSrc: ["'self'"],
    baseUri: ["'none'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
  },
  xFrameOptions: "DENY",
  referrerPolicy: "no-referrer",
  xContentTypeOptions: "nosniff",
  crossOriginResourcePolicy: "same-origin",
  crossOriginOpenerPolicy: "same-origin",
  // Loopback is plain HTTP; behind TLS, the proxy that terminates it decides on HSTS.
  strictTransportSecurity: false,
});

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** A Host header's name (lower case, IPv6 in brackets) and port (undefined when it names none). */
function parseHost(text: string): { name: string; port: number | undefined } | undefined {
  try {
    const url = new URL(`http://${text}`);
    if (url.username || url.password || url.pathname !== "/" || url.search || url.hash) return undefined;
    // The URL drops the scheme's default port (80): a port written in the text is kept.
    const port = url.port !== "" ? Number(url.port) : /:\d+$/.test(text) ? 80 : undefined;
    return { name: url.hostname, port };
  } catch {
    return undefined;
  }
}

/** Whether a page of `origin` is the server's own (its host is the request's Host) or allowed. */
function isOwnOrigin(origin: string, host: string, extra: ReadonlySet<string>): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    // `null` (a sandboxed frame, a data: URL) and anything else that is not an origin.
    return false;
  }
  if (extra.has(url.origin)) return true;
  const own = parseHost(host);
  if (own === undefined || own.name !== url.hostname) return false;
  // A Host without a port is the default port of whichever scheme the client used (a TLS proxy).
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
  return own.port === undefined ? url.port === "" : own.port === port;
}

/** The local port of the connection (`@hono/node-server` passes the request's socket), if known. */
function localPort(env: unknown): number | undefined {
  const port = (env as { incoming?: { socket?: { localPort?: unknown } } } | undefined)?.incoming?.socket?.localPort;
  return typeof port === "number" ? port : undefined;
}
