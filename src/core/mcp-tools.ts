import type { RateLimitDeclaration } from "./rate-limits.ts";

/**
 * MCP servers as tool sources: the interface the envelope sees (`core/` does no I/O). The
 * runtime's implementation is `McpClients` (mcp-clients.ts), over the official SDK's client.
 */

/** How to reach one MCP server: a command speaking stdio, or a streamable HTTP endpoint. */
export type McpServerConfig = (
  | {
      /** The program to start (e.g. "npx", "node"). */
      command: string;
      args?: string[];
      /** Extra environment for the server (the runtime's own environment is not passed on). */
      env?: Record<string, string>;
      cwd?: string;
    }
  | {
      /** The server's streamable HTTP endpoint, e.g. "http://127.0.0.1:3001/mcp". */
      url: string;
      headers?: Record<string, string>;
    }
) & {
  /**
   * The rate limit every call of this server's tools is under: a name of the runtime's
   * `rateLimits`, or a limit of its own (kept under `mcp:<server>`).
   */
  rateLimit?: RateLimitDeclaration;
};

/** One tool a server offers. */
export interface McpToolInfo {
  server: string;
  name: string;
  description?: string | undefined;
  /** The tool's arguments as JSON Schema (an object schema). */
  inputSchema: Record<string, unknown>;
}

/** What a tool call returned: its text content joined, and whether the tool reported an error. */
export interface McpCallResult {
  text: string;
  isError: boolean;
}

/** The MCP servers registered on a runtime, connected on first use. */
export interface McpTools {
  /** The configured server names. */
  readonly servers: readonly string[];
  /** The tools `server` offers (listed once per connection); throws `UnknownNameError` for an unknown server. */
  list(server: string): Promise<McpToolInfo[]>;
  /**
   * Calls `tool` on `server`. A tool that reports an error resolves with `isError`; a server that
   * cannot be reached or breaks the protocol rejects with `McpError` (retryable).
   */
  call(server: string, tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpCallResult>;
  /** Closes every connection (stdio servers are stopped). */
  close(): Promise<void>;
}

/** Where `McpClients` writes its log lines (the runtime's logger). */
export type McpLog = (
  level: "debug" | "info" | "warn" | "error",
  message: string,
  fields: Record<string, unknown>,
) => void;
