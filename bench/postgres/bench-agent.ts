import { defineAgent, defineTool } from "cairn";
import { now } from "./ipc.ts";

/** The agent every Cairn process of the bench runs: `steps` (N trivial tool steps) and `park` (waits for a signal). */

/** Per-step gaps (µs), recorded only while a measured sequential run has set it. */
let gaps: number[] | undefined;
/** In a worker process: called when a parked run's workflow code got past its signal. */
let onResumed: ((runId: string, at: number) => void) | undefined;

/** Records the per-step gaps (µs) of the `steps` runs into `into` while set; off with undefined. */
export function recordGaps(into: number[] | undefined): void {
  gaps = into;
}

/** In a worker process: `resumed` is called when a parked run's workflow code got past its signal. */
export function onParkedResumed(resumed: (runId: string, at: number) => void): void {
  onResumed = resumed;
}

export const bench = defineAgent({
  name: "pgbench",
  tools: { noop: defineTool({ run: (_ctx, { i }: { i: number }) => i }) },
  workflows: {
    async steps(ctx, { n }: { n: number }) {
      let sum = 0;
      let last = performance.now();
      for (let i = 0; i < n; i++) {
        sum += await ctx.tool("noop", { i });
        const t = performance.now();
        gaps?.push((t - last) * 1000);
        last = t;
      }
      return sum;
    },
    async park(ctx, _input: { i: number }) {
      const go = await ctx.waitForSignal<{ ok: boolean }>("go");
      onResumed?.(ctx.runId, now());
      return go.ok;
    },
  },
});
