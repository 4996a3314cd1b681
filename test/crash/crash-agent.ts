import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { defineAgent, defineTool, type ToolDefinition } from "../../src/index.ts";

/** Number of tools in the crash workflow. */
export const TOOL_COUNT = 10;

/**
 * A 10-tool workflow whose every tool execution is counted in a file outside the database
 * (`<countDir>/t<i>`, one byte per execution), so a test can tell which tools ran again.
 */
export function crashAgent(countDir: string) {
  const tools: Record<string, ToolDefinition<{ acc: string }, string>> = {};
  for (let i = 1; i <= TOOL_COUNT; i++) {
    tools[`t${i}`] = defineTool({
      run: (_ctx, { acc }: { acc: string }) => {
        appendFileSync(join(countDir, `t${i}`), "x");
        return `${acc}>t${i}`;
      },
    });
  }
  return defineAgent({
    name: "crash_agent",
    tools,
    workflows: {
      async chain(ctx, { seed }: { seed: string }) {
        let acc = seed;
        for (let i = 1; i <= TOOL_COUNT; i++) acc = await ctx.tool(`t${i}`, { acc });
        return { acc, tools: TOOL_COUNT };
      },
    },
  });
}

/** The output of an uncrashed run, computed independently of the runtime. */
export function expectedOutput(seed: string): { acc: string; tools: number } {
  let acc = seed;
  for (let i = 1; i <= TOOL_COUNT; i++) acc = `${acc}>t${i}`;
  return { acc, tools: TOOL_COUNT };
}
