import { NonRetryableError } from "../../errors.ts";
import type { McpTools } from "../../mcp-tools.ts";
import type { Json } from "../../records.ts";
import type { EnvelopeState } from "../envelope-state.ts";
import { governedCall } from "../governed-call.ts";
import { runStep } from "../journaled-step.ts";

/**
 * A call of an MCP server's tool (from `ctx.agentLoop`): a `tool` step named `<server>__<tool>`,
 * governed like any tool.
 */
export function mcpCall(
  x: EnvelopeState,
  mcp: McpTools,
  server: string,
  tool: string,
  name: string,
  args: Json,
): Promise<unknown> {
  return governedCall(x, "tool", "tool", name, args, undefined, (begun) =>
    runStep(
      x,
      "tool",
      name,
      args,
      {
        policy: undefined,
        startToCloseTimeoutMs: undefined,
        heartbeatTimeoutMs: undefined,
        run: async (attempt) => {
          const input = args && typeof args === "object" && !Array.isArray(args) ? args : {};
          const result = await mcp.call(server, tool, input, attempt.signal);
          // The tool ran and said it failed: that is its answer, not worth a retry.
          if (result.isError) throw new NonRetryableError(result.text || `MCP tool ${server}/${tool} failed`);
          return result.text;
        },
        effect: undefined,
        rateLimit: x.host.rateLimits?.ofMcp(server),
      },
      begun,
    ),
  );
}
