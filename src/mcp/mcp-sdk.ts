import { createRequire } from "node:module";
import type * as ClientModule from "@modelcontextprotocol/sdk/client/index.js";
import type * as StdioModule from "@modelcontextprotocol/sdk/client/stdio.js";
import type * as HttpModule from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type * as TypesModule from "@modelcontextprotocol/sdk/types.js";
import { requirePeer } from "../core/peer-dependency.ts";

/** The parts of the MCP SDK that `McpClients` uses. */
export interface McpSdk {
  readonly Client: typeof ClientModule.Client;
  readonly StdioClientTransport: typeof StdioModule.StdioClientTransport;
  readonly StreamableHTTPClientTransport: typeof HttpModule.StreamableHTTPClientTransport;
  readonly ErrorCode: typeof TypesModule.ErrorCode;
  readonly McpError: typeof TypesModule.McpError;
  readonly ToolListChangedNotificationSchema: typeof TypesModule.ToolListChangedNotificationSchema;
}

const PACKAGE = "@modelcontextprotocol/sdk";
let loaded: McpSdk | undefined;

/**
 * The MCP SDK, loaded at first use: it is an optional peer dependency of cairn, needed only by a
 * runtime given `mcp` servers, which fails at construction with a MissingPeerDependencyError that
 * says `npm install @modelcontextprotocol/sdk` when it is missing.
 */
export function mcpSdk(): McpSdk {
  if (loaded === undefined) {
    const load = createRequire(import.meta.url);
    const part = <T>(path: string) => requirePeer<T>(load, PACKAGE, "the runtime's `mcp` option", `${PACKAGE}/${path}`);
    const { Client } = part<typeof ClientModule>("client/index.js");
    const { StdioClientTransport } = part<typeof StdioModule>("client/stdio.js");
    const { StreamableHTTPClientTransport } = part<typeof HttpModule>("client/streamableHttp.js");
    const { ErrorCode, McpError, ToolListChangedNotificationSchema } = part<typeof TypesModule>("types.js");
    loaded = {
      Client,
      StdioClientTransport,
      StreamableHTTPClientTransport,
      ErrorCode,
      McpError,
      ToolListChangedNotificationSchema,
    };
  }
  return loaded;
}
