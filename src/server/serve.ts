import type { AddressInfo } from "node:net";
import { serve as listen } from "@hono/node-server";
import type { Runtime } from "../runtime/runtime.ts";
import { type CairnServer, createServer, type ServerOptions } from "./app.ts";
import { LOCAL_ADMIN } from "./auth.ts";

/**
 * `serve`: listens for a {@link CairnServer} on a host and port with `@hono/node-server`. A server
 * without tokens acts as the local admin for every request, so it is only ever bound to a loopback
 * address; binding it anywhere else is refused.
 */

/** Where to listen. */
export interface ListenOptions {
  /** @default "127.0.0.1" */
  host?: string;
  /** 0 picks a free port. @default 4000 */
  port?: number;
  /** Where the notice that authentication is off goes. @default stderr */
  print?: (line: string) => void;
}

/** A listening server. */
export interface ListeningServer {
  /** `http://host:port` */
  url: string;
  host: string;
  port: number;
  auth: "token" | "none";
  /** Said (and printed) when authentication is off; undefined otherwise. */
  notice: string | undefined;
  /** Stops listening, ends open connections and stops the server's event feed. */
  close(): Promise<void>;
}

/** Listening without tokens was asked on an address other than loopback. */
export class InsecureBindError extends Error {
  readonly code = "INSECURE_BIND" as const;
  constructor(message: string) {
    super(message);
    this.name = "InsecureBindError";
  }
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "[::1]", "localhost"]);

/** The notice printed when a server has no tokens. */
export const NO_AUTH_NOTICE = "no tokens configured: listening on loopback only, every request acts as local admin";

/**
 * Listens for `server` (or for a server made from `{ runtime, ...options }`). Refuses a host other
 * than 127.0.0.1, ::1 or localhost when the server has no tokens.
 *
 * @example
 * const listening = await serve(createServer(runtime, { tokens: loadTokens() }), { host: "0.0.0.0", port: 4000 });
 */
export async function serve(
  server: CairnServer | (ServerOptions & { runtime: Runtime }),
  options: ListenOptions = {},
): Promise<ListeningServer> {
  const app = "fetch" in server ? server : createServer(server.runtime, server);
  const host = options.host ?? "127.0.0.1";
  const port = options.port ?? 4000;
  let notice: string | undefined;
  if (app.auth === "none") {
    if (!LOOPBACK.has(host)) {
      throw new InsecureBindError(
        `refusing to listen on ${host} without authentication: every request would act as the local admin. Configure tokens (CAIRN_TOKENS="token:subject:role+role" or a --tokens file), or listen on 127.0.0.1`,
      );
    }
    notice =
      app.localSubject === LOCAL_ADMIN.subject
        ? NO_AUTH_NOTICE
        : NO_AUTH_NOTICE.replace("local admin", `${app.localSubject} (admin)`);
    (options.print ?? ((line: string) => process.stderr.write(`${line}\n`)))(notice);
  }
  const hostname = host === "[::1]" ? "::1" : host;
  const { httpServer, address } = await new Promise<{ httpServer: ReturnType<typeof listen>; address: AddressInfo }>(
    (resolve, reject) => {
      const httpServer = listen({ fetch: app.fetch, hostname, port }, (info) => resolve({ httpServer, address: info }));
      httpServer.once("error", reject);
    },
  );
  const urlHost = address.family === "IPv6" || hostname.includes(":") ? `[${address.address}]` : address.address;
  return {
    url: `http://${urlHost}:${address.port}`,
    host: address.address,
    port: address.port,
    auth: app.auth,
    notice,
    close: async () => {
      app.close();
      await new Promise<void>((resolve) => {
        httpServer.close(() => resolve());
        (httpServer as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
    },
  };
}
