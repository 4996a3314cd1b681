import { setTimeout as sleep } from "node:timers/promises";
import { defineAgent, defineTool } from "../../src/index.ts";

/** The agent of the cross-process wake-up test: a run parked on a signal, and one that steps until cancelled. */
export const wakeAgent = defineAgent({
  name: "wake_test",
  tools: {
    tick: defineTool({ run: async (_ctx, { i }: { i: number }) => (await sleep(20)) ?? i }),
  },
  workflows: {
    async park(ctx) {
      const go = await ctx.waitForSignal<{ ok: boolean }>("go");
      return { woken: go.ok };
    },
    async spin(ctx) {
      let i = 0;
      for (; i < 100_000; i++) await ctx.tool("tick", { i });
      return i;
    },
  },
});
