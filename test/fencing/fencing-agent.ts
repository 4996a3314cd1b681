import { appendFileSync } from "node:fs";
import { defineAgent, defineTool } from "../../src/index.ts";

/** Tools in the fencing workflow. */
export const FENCING_TOOLS = 5;
/** How long each tool takes. */
export const TOOL_MS = 300;

/**
 * A workflow of {@link FENCING_TOOLS} tools run one after another. Each tool appends
 * `<seq>:<pid>:start` to `executions` (a file outside the database) when it starts and
 * `<seq>:<pid>:end` when it ends, takes {@link TOOL_MS}, and returns `<seq>:<pid>`: which
 * process ran it. The tool ignores its abort signal on purpose, so a tool in flight in a worker
 * that lost its run still finishes (as a real side effect would).
 */
export function fencingAgent(executions: string) {
  const step = defineTool({
    run: async (_ctx, { seq }: { seq: number }) => {
      appendFileSync(executions, `${seq}:${process.pid}:start\n`);
      await new Promise((r) => setTimeout(r, TOOL_MS));
      appendFileSync(executions, `${seq}:${process.pid}:end\n`);
      return `${seq}:${process.pid}`;
    },
  });
  return defineAgent({
    name: "fencing_agent",
    tools: { step },
    workflows: {
      async chain(ctx, _input: Record<string, never>) {
        const results: string[] = [];
        for (let seq = 1; seq <= FENCING_TOOLS; seq++) results.push(await ctx.tool("step", { seq }));
        return { results };
      },
    },
  });
}
