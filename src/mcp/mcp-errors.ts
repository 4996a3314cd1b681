import { McpError } from "../core/errors.ts";
import type { McpServerConfig } from "../core/mcp-tools.ts";
import type { Connection } from "./mcp-connection.ts";
import { mcpSdk } from "./mcp-sdk.ts";

/** The `McpError` of a server that could not be started, reached or greeted: what to check, and where. */
export function connectError(
  conn: Connection,
  config: McpServerConfig,
  error: unknown,
  connectTimeoutMs: number,
): McpError {
  const where = `new Runtime({ mcp: { ${conn.server}: ... } })`;
  const timedOut = error instanceof mcpSdk().McpError && error.code === mcpSdk().ErrorCode.RequestTimeout;
  let message: string;
  if ("url" in config) {
    message = timedOut
      ? `MCP server "${conn.server}" at ${config.url} did not answer the MCP handshake within ${connectTimeoutMs} ms; check that its url is an MCP endpoint in ${where}`
      : `MCP server "${conn.server}" could not be reached at ${config.url}: ${describe(error)}; check that it is running and its url in ${where}`;
  } else if (timedOut) {
    message = `MCP server "${conn.server}" did not answer the MCP handshake within ${connectTimeoutMs} ms; check that "${config.command}" starts an MCP server on stdio in ${where}`;
  } else {
    const stderr = conn.stderrTail.length === 0 ? "" : `; its stderr ended with: ${conn.stderrTail.join(" | ")}`;
    message = `MCP server "${conn.server}" could not be started: ${describe(error)}${stderr}; check its command in ${where}`;
  }
  return new McpError(message, { cause: error });
}

/** The url of an HTTP server's config; undefined for a stdio one. */
export function urlOf(config: McpServerConfig): string | undefined {
  return "url" in config ? config.url : undefined;
}

/** A message with its cause's message: `fetch failed (connect ECONNREFUSED 127.0.0.1:9)`. */
export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
  return `${error.message}${cause}`;
}
