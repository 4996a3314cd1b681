import { defineAgent } from "../../src/index.ts";

/** A child's input: the number it doubles, or a failure it ends with. */
export interface ChildInput {
  n: number;
  fail: boolean;
}

/** What a parent returns: its child's output, or how its child ended when it did not complete. */
export type ParentOutput = { got: number } | { childEnded: string };

/**
 * The agent of the PostgreSQL children chaos test: a parent spawns one child and waits for it;
 * the child ends at once (no step), so its end lands while its parent is pausing on it.
 */
export const familyAgent = defineAgent({
  name: "family",
  tools: {},
  workflows: {
    async child(_ctx, input: ChildInput) {
      if (input.fail) throw new Error(`child ${input.n} fails as planned`);
      return input.n * 2;
    },
    async parent(ctx, input: ChildInput): Promise<ParentOutput> {
      const child = await ctx.spawn<number>("family", "child", input);
      try {
        return { got: await child.result() };
      } catch (error) {
        return { childEnded: String((error as { code?: string }).code) };
      }
    },
  },
});
