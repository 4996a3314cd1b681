import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { defineAgent, defineTool } from "../../src/index.ts";

/** A small deterministic generator (mulberry32), so a seed names the whole run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The shape of a chaos run: rounds of parallel tools, each with its own duration. */
export function plan(seed: number): { delays: number[][] } {
  const random = prng(seed);
  const rounds = 3 + Math.floor(random() * 4);
  return {
    delays: Array.from({ length: rounds }, () =>
      Array.from({ length: 1 + Math.floor(random() * 4) }, () => 20 + Math.floor(random() * 60)),
    ),
  };
}

/** What an uncrashed run returns, computed without the runtime. */
export function expected(seed: number): { total: number; rounds: number } {
  const { delays } = plan(seed);
  let total = 0;
  for (const [r, round] of delays.entries()) {
    for (const [i, ms] of round.entries()) total += r * 100 + i * 10 + ms;
  }
  return { total, rounds: delays.length };
}

/**
 * A workflow of rounds of parallel tools (Promise.all) with a recorded `ctx.random()` between
 * rounds. Every tool execution appends its step number to `<dir>/executions`, outside the
 * database.
 */
export function chaosAgent(dir: string) {
  return defineAgent({
    name: "chaos",
    tools: {
      work: defineTool({
        run: async (ctx, { r, i, ms }: { r: number; i: number; ms: number }) => {
          appendFileSync(join(dir, "executions"), `${ctx.seq}\n`);
          await new Promise((resolve) => setTimeout(resolve, ms));
          return r * 100 + i * 10 + ms;
        },
      }),
    },
    workflows: {
      async run(ctx, { seed }: { seed: number }) {
        const { delays } = plan(seed);
        let total = 0;
        const draws: number[] = [];
        for (const [r, round] of delays.entries()) {
          const results = await Promise.all(round.map((ms, i) => ctx.tool("work", { r, i, ms })));
          total += results.reduce((a, b) => a + b, 0);
          draws.push(await ctx.random());
        }
        return { total, rounds: delays.length, draws };
      },
    },
  });
}
