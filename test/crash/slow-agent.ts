import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { defineAgent, defineTool } from "../../src/index.ts";

/** Tools in the slow workflow. */
export const SLOW_TOOLS = 5;

/**
 * A workflow of five tools that each take `delayMs`, counting executions in `<countDir>/t<i>`
 * and writing `<countDir>/progress` after each, so a test can signal a process mid-run.
 */
export function slowAgent(countDir: string, delayMs: number) {
  const step = defineTool({
    run: async (ctx, { i, acc }: { i: number; acc: number }) => {
      appendFileSync(join(countDir, `t${i}`), "x");
      await new Promise((r) => setTimeout(r, delayMs));
      appendFileSync(join(countDir, "progress"), `${i}:${ctx.attempt}\n`);
      return acc + i;
    },
  });
  return defineAgent({
    name: "slow_agent",
    tools: { step },
    workflows: {
      async sum(ctx, { start }: { start: number }) {
        let acc = start;
        for (let i = 1; i <= SLOW_TOOLS; i++) acc = await ctx.tool("step", { i, acc });
        return { acc };
      },
    },
  });
}
