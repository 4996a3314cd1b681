import { type AgentLoopOptions, type AgentLoopResult, runAgentLoop } from "../../agent-loop.ts";
import type { EnvelopeState } from "../envelope-state.ts";
import { llmCall } from "./llm-call.ts";
import { loopTools } from "./loop-tools.ts";
import { mcpCall } from "./mcp-call.ts";
import { toolCall } from "./tool-call.ts";

/**
 * `ctx.agentLoop(options)`: the loop (`runAgentLoop`) over this run's view: the agent's tools and
 * the MCP servers' tools, and model calls, each a step of its own.
 */
export function agentLoopCall(x: EnvelopeState, options: AgentLoopOptions): Promise<AgentLoopResult> {
  return runAgentLoop(
    {
      generate: (request) => llmCall(x, request),
      tools: (o) =>
        loopTools(o, x.agent, x.host.mcp, {
          callTool: (name, args) => toolCall(x, name, args, undefined),
          callMcp: (mcp, server, tool, name, args) => mcpCall(x, mcp, server, tool, name, args),
        }),
    },
    options,
  );
}
