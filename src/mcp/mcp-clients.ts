import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError, RuntimeClosedError, UnknownNameError } from "../core/errors.ts";
import type { McpCallResult, McpLog, McpServerConfig, McpToolInfo, McpTools } from "../core/mcp-tools.ts";
import { toCallResult } from "./mcp-call-result.ts";
import { type Connection, openTransport } from "./mcp-connection.ts";
import { connectError, describe, urlOf } from "./mcp-errors.ts";
import { mcpSdk } from "./mcp-sdk.ts";
import { abortable, withTimeout } from "./promise-limits.ts";

/** Options of {@link McpClients}. */
export interface McpClientsOptions {
  /** The client name sent to servers in the MCP handshake. @default "cairn" */
  clientName?: string;
  /**
   * How long a server may take to answer the handshake (spawn plus `initialize`). Generous by
   * default: a first `npx -y some-server` downloads the package before it answers.
   * @default 60_000
   */
  connectTimeoutMs?: number;
  /**
   * How long one tool call may take before it fails with `McpError`. The MCP SDK puts a timeout
   * on every request; the caller's `AbortSignal` (a step's timeout) usually ends a call first.
   * At most 2_147_483_647 (a timer's limit).
   * @default 60_000
   */
  callTimeoutMs?: number;
  /** Lifecycle lines and each line a stdio server writes to stderr (at `debug`). @default no logging */
  log?: McpLog;
}

/**
 * The runtime's MCP servers, over the official SDK's client: stdio servers are started as child
 * processes, streamable HTTP servers are reached at their URL. Each server is connected on its
 * first `list` or `call` (one handshake at a time), its tools are listed once per connection, and
 * a connection that fails or closes is dropped so that the next call reconnects.
 *
 * A tool that reports an error resolves with `isError: true`; a server that cannot be started,
 * reached or understood rejects with a retryable `McpError`. The SDK
 * (`@modelcontextprotocol/sdk`) is an optional peer dependency of cairn: without it, constructing
 * with servers throws a MissingPeerDependencyError that says how to install it.
 *
 * @example
 * const mcp = new McpClients({
 *   files: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/data"] },
 *   search: { url: "http://127.0.0.1:3001/mcp", headers: { authorization: "Bearer …" } },
 * });
 * const tools = await mcp.list("files");
 * const { text, isError } = await mcp.call("files", "read_file", { path: "/data/a.txt" }, signal);
 * await mcp.close();
 */
export class McpClients implements McpTools {
  readonly servers: readonly string[];
  readonly #configs: ReadonlyMap<string, McpServerConfig>;
  readonly #clientName: string;
  readonly #connectTimeoutMs: number;
  readonly #callTimeoutMs: number;
  readonly #log: McpLog;
  readonly #connections = new Map<string, Connection>();
  /** Connections being closed, so that `close()` waits for every child to be gone. */
  readonly #disposing = new Set<Promise<void>>();
  #closed: Promise<void> | undefined;

  constructor(servers: Record<string, McpServerConfig>, options: McpClientsOptions = {}) {
    this.#configs = new Map(Object.entries(servers));
    this.servers = Object.freeze([...this.#configs.keys()]);
    this.#clientName = options.clientName ?? "cairn";
    this.#connectTimeoutMs = options.connectTimeoutMs ?? 60_000;
    this.#callTimeoutMs = options.callTimeoutMs ?? 60_000;
    this.#log = options.log ?? (() => {});
    // The MCP SDK is an optional peer dependency: without it, servers fail here, naming it.
    if (this.servers.length > 0) mcpSdk();
  }

  /** The tools `server` offers, as the server names them; throws `UnknownNameError` for an unknown server. */
  async list(server: string): Promise<McpToolInfo[]> {
    const conn = await this.#connection(server, undefined);
    conn.tools ??= this.#listTools(conn);
    const listing = conn.tools;
    try {
      return [...(await listing)];
    } catch (error) {
      if (conn.tools === listing) conn.tools = undefined;
      if (this.#closed !== undefined) throw this.#closedError(server, error);
      throw error;
    }
  }

  /**
   * Calls `tool` on `server` with `args`. Text parts of the result are joined with "\n"; other
   * parts are described in brackets (`[image image/png, 1234 bytes]`). Rejects with the signal's
   * reason once `signal` aborts.
   */
  async call(server: string, tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpCallResult> {
    this.#config(server);
    signal.throwIfAborted();
    const conn = await this.#connection(server, signal);
    if (conn.taskOnly.has(tool)) {
      return {
        isError: true,
        text: `tool "${tool}" of MCP server "${server}" runs only as an MCP task, which cairn does not support`,
      };
    }
    // A signal of our own per call: the SDK never removes the listener it adds to the signal.
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      const result = await conn.client.callTool({ name: tool, arguments: args }, undefined, {
        signal: controller.signal,
        timeout: this.#callTimeoutMs,
      });
      return toCallResult(result);
    } catch (error) {
      // The SDK rejects an aborted request with its own RequestTimeout error; the caller wants its reason.
      if (signal.aborted) throw signal.reason;
      if (this.#closed !== undefined) throw this.#closedError(server, error);
      throw this.#failed(conn, `failed calling tool "${tool}"`, error);
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** Closes every connection and waits until stdio servers have exited. Idempotent; later calls reject. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      for (const conn of [...this.#connections.values()]) this.#drop(conn);
      await Promise.all([...this.#disposing]);
    })();
    return this.#closed;
  }

  #config(server: string): McpServerConfig {
    const config = this.#configs.get(server);
    if (config === undefined) {
      const known = this.servers.length === 0 ? "none" : this.servers.join(", ");
      throw new UnknownNameError(
        "UNKNOWN_MCP_SERVER",
        `unknown MCP server "${server}" (known: ${known}); register it in new Runtime({ mcp: { ${server}: ... } })`,
      );
    }
    return config;
  }

  async #connection(server: string, signal: AbortSignal | undefined): Promise<Connection> {
    const config = this.#config(server);
    if (this.#closed !== undefined) throw this.#closedError(server, undefined);
    let conn = this.#connections.get(server);
    if (conn === undefined) {
      conn = this.#open(server, config);
      this.#connections.set(server, conn);
    }
    try {
      // An aborted caller stops waiting; the handshake goes on for the next one.
      await (signal === undefined ? conn.ready : abortable(conn.ready, signal));
    } catch (error) {
      if (this.#closed !== undefined && signal?.aborted !== true) throw this.#closedError(server, error);
      throw error;
    }
    return conn;
  }

  /** Not retryable: once closed, no call reconnects (a new child would outlive the runtime). */
  #closedError(server: string, cause: unknown): RuntimeClosedError {
    return new RuntimeClosedError(
      `MCP server "${server}" cannot be used: the MCP connections were closed`,
      cause === undefined ? {} : { cause },
    );
  }

  #open(server: string, config: McpServerConfig): Connection {
    const { Client, StdioClientTransport, ToolListChangedNotificationSchema } = mcpSdk();
    const client = new Client({ name: this.#clientName, version: "0.1.0" });
    let onClosed = () => {};
    const conn: Connection = {
      server,
      client,
      transport: undefined,
      ready: Promise.resolve(),
      tools: undefined,
      taskOnly: new Set(),
      stderrTail: [],
      closed: new Promise<void>((resolve) => {
        onClosed = resolve;
      }),
      disposed: undefined,
    };
    let transport: StdioClientTransport | StreamableHTTPClientTransport;
    try {
      transport = openTransport(conn, config, this.#log);
    } catch (error) {
      conn.ready = Promise.reject(connectError(conn, config, error, this.#connectTimeoutMs));
      conn.ready.catch(() => {});
      this.#drop(conn);
      return conn;
    }
    conn.transport = transport;
    client.onerror = (error) => this.#log("debug", `MCP server "${server}": ${describe(error)}`, { server });
    // For stdio the transport reports a close when the child process has exited, not before.
    client.onclose = () => {
      onClosed();
      if (conn.disposed === undefined) {
        this.#log("warn", `MCP server "${server}" closed the connection; the next call reconnects`, { server });
      }
      this.#drop(conn);
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      conn.tools = undefined;
    });
    conn.ready = client.connect(transport, { timeout: this.#connectTimeoutMs }).then(
      () => {
        const info = client.getServerVersion();
        const where = transport instanceof StdioClientTransport ? { pid: transport.pid } : { url: urlOf(config) };
        this.#log("debug", `MCP server "${server}" connected`, {
          server,
          ...where,
          serverName: info?.name,
          serverVersion: info?.version,
        });
      },
      (error: unknown) => {
        this.#drop(conn);
        throw connectError(conn, config, error, this.#connectTimeoutMs);
      },
    );
    // A caller that aborted no longer awaits the handshake; its failure is not unhandled.
    conn.ready.catch(() => {});
    // The SDK spawns the process synchronously within connect(); a failed spawn leaves no pid.
    if (transport instanceof StdioClientTransport) {
      if (transport.pid === null) onClosed();
      else this.#log("debug", `MCP server "${server}" started`, { server, pid: transport.pid });
    }
    return conn;
  }

  async #listTools(conn: Connection): Promise<McpToolInfo[]> {
    try {
      const tools: McpToolInfo[] = [];
      const cursors = new Set<string>();
      let cursor: string | undefined;
      do {
        const page = await conn.client.listTools(cursor === undefined ? undefined : { cursor });
        for (const tool of page.tools) {
          if (tool.execution?.taskSupport === "required") {
            conn.taskOnly.add(tool.name);
            continue;
          }
          tools.push({
            server: conn.server,
            name: tool.name,
            description: tool.description,
            inputSchema: tool.inputSchema,
          });
        }
        cursor = page.nextCursor;
        if (cursor !== undefined && cursors.has(cursor)) {
          throw new Error(`the server repeated the page cursor "${cursor}" of tools/list`);
        }
        if (cursor !== undefined) cursors.add(cursor);
      } while (cursor !== undefined);
      return tools;
    } catch (error) {
      throw this.#failed(conn, "failed listing its tools", error);
    }
  }

  /** The `McpError` of a failed request; drops the connection when the failure was the connection's. */
  #failed(conn: Connection, what: string, error: unknown): McpError {
    // A JSON-RPC error the server answered leaves the connection usable, and so does a request
    // that timed out (other calls may be running on it); anything else (closed pipe, failed
    // fetch, unknown HTTP session, a malformed message) means reconnecting.
    const keep = error instanceof mcpSdk().McpError && error.code !== mcpSdk().ErrorCode.ConnectionClosed;
    if (!keep) this.#drop(conn);
    const timedOut = error instanceof mcpSdk().McpError && error.code === mcpSdk().ErrorCode.RequestTimeout;
    const hint = timedOut
      ? `; it took longer than ${this.#callTimeoutMs} ms (callTimeoutMs)`
      : keep
        ? ""
        : "; the connection was dropped and the next call reconnects";
    return new McpError(`MCP server "${conn.server}" ${what}: ${describe(error)}${hint}`, { cause: error });
  }

  /** Forgets `conn` (the next use reconnects) and closes it in the background; `close()` waits for it. */
  #drop(conn: Connection): void {
    if (this.#connections.get(conn.server) === conn) this.#connections.delete(conn.server);
    if (conn.disposed !== undefined) return;
    conn.disposed = (async () => {
      try {
        const transport = conn.transport;
        if (transport instanceof mcpSdk().StreamableHTTPClientTransport && transport.sessionId !== undefined) {
          // Ends the server's session (HTTP DELETE) rather than leaving it to time out.
          await withTimeout(transport.terminateSession(), 2_000).catch(() => {});
        }
        // For stdio the SDK closes the server's stdin, then sends SIGTERM after 2 s and SIGKILL after
        // 4 s. When the handshake failed the SDK is already closing, and its close() returns at once:
        // waiting for `closed` is what makes `close()` return only once the process is gone.
        await conn.client.close();
        if (conn.transport instanceof mcpSdk().StdioClientTransport) await withTimeout(conn.closed, 5_000);
        this.#log("debug", `MCP server "${conn.server}" disconnected`, { server: conn.server });
      } catch (error) {
        this.#log("warn", `MCP server "${conn.server}" did not close cleanly: ${describe(error)}`, {
          server: conn.server,
        });
      }
    })();
    const disposing = conn.disposed;
    this.#disposing.add(disposing);
    void disposing.finally(() => this.#disposing.delete(disposing));
  }
}
