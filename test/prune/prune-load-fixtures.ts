import { defineAgent, defineTool } from "../../src/agent/define.ts";
import type { RuntimeBackend } from "../../src/backend/backend.ts";
import { endedImport } from "../../src/backend/conformance/prune-fixtures.ts";
import type { Runtime } from "../../src/runtime/runtime.ts";

/** The tables a run owns rows in, by backend, and the column naming the run. */
export const OWNED_TABLES = {
  sqlite: ["runs", "transitions", "steps", "waits", "signals"],
  postgres: ["runs", "transitions", "steps", "journal", "waits", "signals"],
} as const;

/** The prefix of every ended run the load test makes. */
export const ENDED_PREFIX = "old-";

/**
 * An agent whose runs take a few steps with a short pause each (`work`), and one that waits for a
 * signal (`hold`): the runs a prune must leave alone while it works.
 */
export const busyAgent = defineAgent({
  name: "busy",
  tools: {
    tick: defineTool({
      run: async (_ctx, { n }: { n: number }) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        return n + 1;
      },
    }),
  },
  workflows: {
    async work(ctx, { steps }: { steps: number }) {
      let n = 0;
      for (let i = 0; i < steps; i++) n = await ctx.tool("tick", { n });
      return { n };
    },
    async hold(ctx) {
      return ctx.waitForSignal("go");
    },
  },
});

/**
 * Imports `count` ended runs (ids `old-<n>`) with a row in every table a run owns, `unique` of them
 * with an out-of-line payload of their own, the next ten sharing one (hashing a large payload for
 * every run would take most of the test's time); `concurrency` at a time.
 */
export async function importEnded(
  backend: RuntimeBackend,
  from: number,
  count: number,
  unique: number,
  concurrency = 1,
) {
  let next = from;
  const end = from + count;
  const worker = async () => {
    while (next < end) {
      const n = next++;
      const i = n - from;
      const bigResult =
        i < unique ? `payload ${n} `.repeat(30_000) : i < unique + 10 ? "shared ".repeat(50_000) : "small";
      await backend.importRun(endedImport({ id: `${ENDED_PREFIX}${String(n).padStart(5, "0")}`, bigResult }));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Starts `count` runs of `busyAgent.work` on `runtime` and returns their ids. */
export async function startBusy(runtime: Runtime, count: number, steps: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await runtime.run(busyAgent, "work", { steps })).id);
  return ids;
}
