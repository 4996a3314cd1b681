import type { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ErrorCode,
  McpError as SdkMcpError,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { McpError, RuntimeClosedError, UnknownNameError } from "../core/errors.ts";
import type { McpCallResult, McpServerConfig, McpToolInfo, McpTools } from "../core/mcp-tools.ts";

/** Where {@link McpClients} writes its log lines (the runtime's logger). */
export type McpLog = (
  level: "debug" | "info" | "warn" | "error",
  message: string,
  fields: Record<string, unknown>,
) => void;

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

/** One connection to one server: opened on first use, dropped when it fails or closes. */
interface Connection {
  readonly server: string;
  readonly client: Client;
  transport: StdioClientTransport | StreamableHTTPClientTransport | undefined;
  /** Settles when the handshake is done; rejects with `McpError`. */
  ready: Promise<void>;
  /** The tool list, fetched once per connection (again after a `tools/list_changed`). */
  tools: Promise<McpToolInfo[]> | undefined;
  /** Tools that can only run as MCP tasks, which this client does not do: not listed, not called. */
  readonly taskOnly: Set<string>;
  /** The last lines the server wrote to stderr, for the error when it fails to start. */
  readonly stderrTail: string[];
  /** Resolves when the connection has closed: for stdio, when the server process has exited. */
  readonly closed: Promise<void>;
  disposed: Promise<void> | undefined;
}

const STDERR_TAIL_LINES = 5;

/**
 * The runtime's MCP servers, over the official SDK's client: stdio servers are started as child
 * processes, streamable HTTP servers are reached at their URL. Each server is connected on its
 * first `list` or `call` (one handshake at a time), its tools are listed once per connection, and
 * a connection that fails or closes is dropped so that the next call reconnects.
 *
 * A tool that reports an error resolves with `isError: true`; a server that cannot be started,
 * reached or understood rejects with a retryable `McpError`.
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
      transport = this.#transport(conn, config);
    } catch (error) {
      conn.ready = Promise.reject(this.#connectError(conn, config, error));
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
        throw this.#connectError(conn, config, error);
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

  #transport(conn: Connection, config: McpServerConfig): StdioClientTransport | StreamableHTTPClientTransport {
    if ("url" in config) {
      return new StreamableHTTPClientTransport(new URL(config.url), {
        ...(config.headers === undefined ? {} : { requestInit: { headers: config.headers } }),
      });
    }
    const transport = new StdioClientTransport({
      command: config.command,
      ...(config.args === undefined ? {} : { args: config.args }),
      ...(config.env === undefined ? {} : { env: config.env }),
      ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
      // Piped, not inherited: a server's banner and logs must not land in the runtime's output.
      stderr: "pipe",
    });
    const stderr = transport.stderr as Readable | null;
    let partial = "";
    const line = (text: string) => {
      if (text.trim() === "") return;
      conn.stderrTail.push(text);
      if (conn.stderrTail.length > STDERR_TAIL_LINES) conn.stderrTail.shift();
      this.#log("debug", `MCP server "${conn.server}" stderr: ${text}`, { server: conn.server, stderr: text });
    };
    stderr?.setEncoding("utf8");
    stderr?.on("data", (chunk: string) => {
      const lines = (partial + chunk).split(/\r?\n/);
      partial = lines.pop() ?? "";
      for (const text of lines) line(text);
    });
    stderr?.on("end", () => line(partial));
    return transport;
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
    const keep = error instanceof SdkMcpError && error.code !== ErrorCode.ConnectionClosed;
    if (!keep) this.#drop(conn);
    const timedOut = error instanceof SdkMcpError && error.code === ErrorCode.RequestTimeout;
    const hint = timedOut
      ? `; it took longer than ${this.#callTimeoutMs} ms (callTimeoutMs)`
      : keep
        ? ""
        : "; the connection was dropped and the next call reconnects";
    return new McpError(`MCP server "${conn.server}" ${what}: ${describe(error)}${hint}`, { cause: error });
  }

  #connectError(conn: Connection, config: McpServerConfig, error: unknown): McpError {
    const where = `new Runtime({ mcp: { ${conn.server}: ... } })`;
    const timedOut = error instanceof SdkMcpError && error.code === ErrorCode.RequestTimeout;
    let message: string;
    if ("url" in config) {
      message = timedOut
        ? `MCP server "${conn.server}" at ${config.url} did not answer the MCP handshake within ${this.#connectTimeoutMs} ms; check that its url is an MCP endpoint in ${where}`
        : `MCP server "${conn.server}" could not be reached at ${config.url}: ${describe(error)}; check that it is running and its url in ${where}`;
    } else if (timedOut) {
      message = `MCP server "${conn.server}" did not answer the MCP handshake within ${this.#connectTimeoutMs} ms; check that "${config.command}" starts an MCP server on stdio in ${where}`;
    } else {
      const stderr = conn.stderrTail.length === 0 ? "" : `; its stderr ended with: ${conn.stderrTail.join(" | ")}`;
      message = `MCP server "${conn.server}" could not be started: ${describe(error)}${stderr}; check its command in ${where}`;
    }
    return new McpError(message, { cause: error });
  }

  /** Forgets `conn` (the next use reconnects) and closes it in the background; `close()` waits for it. */
  #drop(conn: Connection): void {
    if (this.#connections.get(conn.server) === conn) this.#connections.delete(conn.server);
    if (conn.disposed !== undefined) return;
    conn.disposed = (async () => {
      try {
        const transport = conn.transport;
        if (transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined) {
          // Ends the server's session (HTTP DELETE) rather than leaving it to time out.
          await withTimeout(transport.terminateSession(), 2_000).catch(() => {});
        }
        // For stdio the SDK closes the server's stdin, then sends SIGTERM after 2 s and SIGKILL after
        // 4 s. When the handshake failed the SDK is already closing, and its close() returns at once:
        // waiting for `closed` is what makes `close()` return only once the process is gone.
        await conn.client.close();
        if (conn.transport instanceof StdioClientTransport) await withTimeout(conn.closed, 5_000);
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

/** Joins the text parts of a tool result; other parts are described in brackets. */
function toCallResult(result: Awaited<ReturnType<Client["callTool"]>>): McpCallResult {
  if (!("content" in result) || !Array.isArray(result.content)) {
    // A server on the 2024-10-07 protocol answers `{ toolResult }`.
    return { text: JSON.stringify((result as { toolResult?: unknown }).toolResult ?? null), isError: false };
  }
  const parts: string[] = [];
  let hasText = false;
  for (const part of result.content) {
    switch (part.type) {
      case "text":
        hasText = true;
        parts.push(part.text);
        break;
      case "image":
      case "audio":
        parts.push(`[${part.type} ${part.mimeType}, ${Buffer.byteLength(part.data, "base64")} bytes]`);
        break;
      case "resource":
        if ("text" in part.resource) {
          hasText = true;
          parts.push(`[resource ${part.resource.uri}]\n${part.resource.text}`);
        } else {
          const mime = part.resource.mimeType === undefined ? "" : ` ${part.resource.mimeType}`;
          parts.push(
            `[resource ${part.resource.uri}${mime}, ${Buffer.byteLength(part.resource.blob, "base64")} bytes]`,
          );
        }
        break;
      case "resource_link":
        parts.push(`[resource link ${part.uri}${part.name === "" ? "" : ` (${part.name})`}]`);
        break;
      default:
        parts.push(`[${(part as { type: string }).type}]`);
    }
  }
  if (!hasText && result.structuredContent !== undefined) parts.unshift(JSON.stringify(result.structuredContent));
  return { text: parts.join("\n"), isError: result.isError === true };
}

function urlOf(config: McpServerConfig): string | undefined {
  return "url" in config ? config.url : undefined;
}

/** A message with its cause's message: `fetch failed (connect ECONNREFUSED 127.0.0.1:9)`. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
  return `${error.message}${cause}`;
}

/** `promise`, or the signal's reason as soon as it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
