import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { McpCallResult } from "../core/mcp-tools.ts";

/** Joins the text parts of a tool result; other parts are described in brackets. */
export function toCallResult(result: Awaited<ReturnType<Client["callTool"]>>): McpCallResult {
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
