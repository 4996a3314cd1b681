import type { Readable } from "node:stream";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { McpLog, McpServerConfig, McpToolInfo } from "../core/mcp-tools.ts";
import { mcpSdk } from "./mcp-sdk.ts";

/** One connection to one server: opened on first use, dropped when it fails or closes. */
export interface Connection {
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

/** The lines of a stdio server's stderr kept for the error when it fails to start. */
const STDERR_TAIL_LINES = 5;

/**
 * The transport of `config`: a streamable HTTP client for a `url`, else a stdio server started as
 * a child process, whose stderr lines are logged (at `debug`) and the last kept in `conn`.
 */
export function openTransport(
  conn: Connection,
  config: McpServerConfig,
  log: McpLog,
): StdioClientTransport | StreamableHTTPClientTransport {
  const { StdioClientTransport, StreamableHTTPClientTransport } = mcpSdk();
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
    log("debug", `MCP server "${conn.server}" stderr: ${text}`, { server: conn.server, stderr: text });
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
