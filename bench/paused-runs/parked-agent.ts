import { defineAgent, defineTool } from "cairn";
import { executions, live } from "./heap.ts";

/** The agent of the bench: `park` takes two tool steps, then waits for a signal (and is watched by the heap check). */
export const agent = defineAgent({
  name: "parked",
  tools: {
    lookup: defineTool({ run: (_ctx, { i }: { i: number }) => ({ customer: `c${i}`, tier: i % 3 }) }),
    score: defineTool({ run: (_ctx, { tier }: { tier: number }) => tier * 10 }),
  },
  workflows: {
    async park(ctx, input: { i: number }) {
      const { i } = input;
      live.ctx++;
      live.input++;
      executions.register(ctx, "ctx");
      executions.register(input, "input");
      const found = await ctx.tool("lookup", { i });
      const score = await ctx.tool("score", { tier: found.tier });
      const go = await ctx.waitForSignal<{ ok: boolean }>("go");
      return { customer: found.customer, score, ok: go.ok };
    },
  },
});
