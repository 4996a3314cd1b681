import { describe, expect, it } from "vitest";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import type { TransitionRequest } from "../src/backend/backend.ts";
import { InMemoryBackend } from "../src/backend/memory/memory-backend.ts";
import { silentLogger } from "../src/core/logger.ts";
import type { StepRecord } from "../src/core/records.ts";
import { Runtime } from "../src/runtime/runtime.ts";

/**
 * A backend that records every saveSteps call (which steps, in which state, synchronous or not)
 * and the steps each transition carries.
 */
class CountingBackend extends InMemoryBackend {
  readonly writes: { steps: string[]; sync: boolean }[] = [];
  readonly transitions: { to: string; steps: string[] }[] = [];
  override async saveSteps(steps: readonly StepRecord[], options: { epoch: number; sync: boolean }): Promise<void> {
    this.writes.push({ steps: steps.map((s) => `${s.seq}:${s.status}`), sync: options.sync });
    return super.saveSteps(steps, options);
  }
  override async transition(request: TransitionRequest) {
    this.transitions.push({ to: request.to, steps: (request.steps ?? []).map((s) => `${s.seq}:${s.status}`) });
    return super.transition(request);
  }
}

describe("group commit in a run", () => {
  const agent = defineAgent({
    name: "grouped",
    tools: { inc: defineTool({ run: (_ctx, { n }: { n: number }) => n + 1 }) },
    workflows: {
      async chain(ctx, { steps }: { steps: number }) {
        let n = 0;
        for (let i = 0; i < steps; i++) n = await ctx.tool("inc", { n });
        return n;
      },
      async fan(ctx) {
        const all = await Promise.all([1, 2, 3].map((n) => ctx.tool("inc", { n })));
        return all;
      },
    },
  });

  it("pays one synchronous commit per step in a sequential workflow", async () => {
    const backend = new CountingBackend();
    const runtime = new Runtime({ agents: [agent], backend, logger: silentLogger });
    try {
      const run = await runtime.run(agent, "chain", { steps: 10 });
      const runId = run.id;
      expect(await run.result()).toBe(10);
      // start 1; then [result i, start i+1] for i = 1..9; result 10 rides with COMPLETED.
      expect(backend.writes).toHaveLength(10);
      expect(backend.writes[0]).toEqual({ steps: ["1:started"], sync: false });
      for (let i = 1; i < 10; i++) {
        expect(backend.writes[i]).toEqual({ steps: [`${i}:completed`, `${i + 1}:started`], sync: true });
      }
      expect(backend.transitions.map((t) => `${t.to} ${t.steps.join(",")}`)).toEqual([
        "RUNNING ",
        "COMPLETED 10:completed",
      ]);
      expect((await backend.loadSteps(runId)).map((s) => s.status)).toEqual(Array(10).fill("completed"));
    } finally {
      await runtime.shutdown();
    }
  });

  it("commits the start records of parallel steps together, before any of them runs", async () => {
    const backend = new CountingBackend();
    const runtime = new Runtime({ agents: [agent], backend, logger: silentLogger });
    try {
      expect(await (await runtime.run(agent, "fan", {})).result()).toEqual([2, 3, 4]);
      expect(backend.writes[0]).toEqual({ steps: ["1:started", "2:started", "3:started"], sync: false });
      // The three results come back in the same turn, when the workflow returns: they ride with COMPLETED.
      expect(backend.writes).toHaveLength(1);
      expect(backend.transitions.at(-1)).toEqual({
        to: "COMPLETED",
        steps: ["1:completed", "2:completed", "3:completed"],
      });
    } finally {
      await runtime.shutdown();
    }
  });
});
