import { defineAgent } from "../../src/index.ts";

/** The agent the schedule crash test's schedules start: each run ends at once. */
export const ticker = defineAgent({
  name: "ticker",
  tools: {},
  workflows: {
    async tick(_ctx, input: { n: number } | null) {
      return { n: input?.n ?? 0 };
    },
  },
});
