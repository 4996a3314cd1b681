import type { AgentDefinition } from "../../agent-definition.ts";
import { type AgentLoopOptions, type LoopTool, toolJsonSchema } from "../../agent-loop.ts";
import { UnknownNameError } from "../../errors.ts";
import type { McpTools } from "../../mcp-tools.ts";
import type { Json } from "../../records.ts";

/**
 * The tools an agent loop offers: the agent's own (`options.tools`, else all of them) and those of
 * the MCP servers named in `options.mcp`, as `<server>__<tool>`. Calls go through `callTool` and
 * `callMcp`, which make them steps.
 */
export async function loopTools(
  options: AgentLoopOptions,
  agent: AgentDefinition,
  mcp: McpTools | undefined,
  steps: {
    callTool(name: string, args: Json): Promise<unknown>;
    callMcp(mcp: McpTools, server: string, tool: string, name: string, args: Json): Promise<unknown>;
  },
): Promise<LoopTool[]> {
  const names = options.tools ?? Object.keys(agent.tools);
  const tools: LoopTool[] = names.map((name) => {
    const tool = agent.tools[name];
    if (!tool) {
      const known = Object.keys(agent.tools).join(", ") || "none";
      throw new UnknownNameError(
        "UNKNOWN_TOOL",
        `ctx.agentLoop: agent "${agent.name}" has no tool "${name}" (its tools: ${known})`,
      );
    }
    return {
      name,
      ...(tool.description ? { description: tool.description } : {}),
      inputSchema: toolJsonSchema(tool.input),
      call: (args) => steps.callTool(name, args),
    };
  });
  for (const server of options.mcp ?? []) {
    if (!mcp) {
      throw new UnknownNameError(
        "UNKNOWN_MCP_SERVER",
        `ctx.agentLoop: no MCP server "${server}" is registered; pass new Runtime({ mcp: { ${server}: { command: ... } } })`,
      );
    }
    for (const info of await mcp.list(server)) {
      // Providers accept letters, digits, "_" and "-" in tool names.
      const name = `${server}__${info.name}`.replace(/[^a-zA-Z0-9_-]/g, "_");
      tools.push({
        name,
        ...(info.description ? { description: info.description } : {}),
        // Some providers refuse a `$schema` key in a tool's parameters.
        inputSchema: Object.fromEntries(Object.entries(info.inputSchema).filter(([k]) => k !== "$schema")),
        call: (args) => steps.callMcp(mcp, server, info.name, name, args),
      });
    }
  }
  return tools;
}
