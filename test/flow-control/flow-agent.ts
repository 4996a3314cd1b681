import { z } from "zod";
import { defineAgent, defineTool } from "../../src/index.ts";

/**
 * The agent of the flow-control process test: `work` holds its slot for `ms` milliseconds (one
 * tool call) and returns its input. Runs of `keyed` take the concurrency key from their input
 * (`flow.concurrency`, limit 2); runs of `work` take whatever key and priority they are started with.
 */
export const flowAgent = defineAgent({
  name: "flow_test",
  tools: {
    hold: defineTool({
      input: z.object({ ms: z.number() }),
      run: async (_ctx, { ms }: { ms: number }) => {
        await new Promise((r) => setTimeout(r, ms));
        return { held: ms };
      },
    }),
  },
  workflows: {
    async keyed(ctx, input: { key: string; ms: number }) {
      await ctx.tool("hold", { ms: input.ms });
      return input;
    },
    async work(ctx, input: { ms: number }) {
      await ctx.tool("hold", { ms: input.ms });
      return input;
    },
  },
  flow: { workflows: { keyed: { concurrency: { limit: 2, key: (input: { key: string }) => input.key } } } },
});
