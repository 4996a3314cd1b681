import { describe, expect, it } from "vitest";
import { defineAgent, defineTool } from "../../agent/define.ts";
import type { TransitionRequest } from "../../backend/backend.ts";
import { InMemoryBackend } from "../../backend/memory/memory-backend.ts";
import { Runtime } from "../../runtime/runtime.ts";
import { silentLogger } from "../logger.ts";
import type { StepRecord } from "../records.ts";
import { JournalWriter } from "./journal-writer.ts";

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

const step = (seq: number, status: StepRecord["status"] = "started") => ({ seq, status }) as StepRecord;

describe("JournalWriter", () => {
  it("commits queued results with the next write, and before() waits for that commit", async () => {
    const writes: { seqs: number[]; sync: boolean }[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const writer = new JournalWriter(async (steps, sync) => {
      writes.push({ seqs: steps.map((s) => s.seq), sync });
      if (writes.length === 1) await gate;
    });
    writer.later(step(1, "completed"), true);
    let started = false;
    const before = writer.before(step(2)).then(() => {
      started = true;
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(writes).toEqual([{ seqs: [1, 2], sync: true }]);
    expect(started).toBe(false);
    release();
    await before;
    expect(started).toBe(true);
  });

  it("coalesces writes of one step and flushes queued writes on the next turn", async () => {
    const writes: number[][] = [];
    const writer = new JournalWriter(async (steps) => {
      writes.push(steps.map((s) => s.seq));
    });
    const s1 = step(1);
    writer.later(s1, false);
    writer.later(s1, false);
    writer.later(step(2, "completed"), true);
    expect(writes).toEqual([]);
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual([[1, 2]]);
  });

  it("drain hands back what is queued instead of writing it, and accepts nothing after", async () => {
    const writes: number[][] = [];
    const writer = new JournalWriter(async (steps) => {
      writes.push(steps.map((s) => s.seq));
    });
    writer.later(step(1, "completed"), true);
    expect((await writer.drain()).map((s) => `${s.seq}:${s.status}`)).toEqual(["1:completed"]);
    writer.later(step(2, "completed"), true);
    await expect(writer.before(step(3))).rejects.toThrow("after its run ended");
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual([]);
  });

  it("drain waits for the write in flight to commit", async () => {
    const writes: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const writer = new JournalWriter(async (steps) => {
      writes.push(steps.map((s) => s.seq));
      await gate;
    });
    const before = writer.before(step(1));
    await new Promise((r) => setTimeout(r, 5));
    let drained: StepRecord[] | undefined;
    const drain = writer.drain().then((steps) => {
      drained = steps;
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(drained).toBeUndefined();
    release();
    await Promise.all([before, drain]);
    expect(writes).toEqual([[1]]);
    expect(drained).toEqual([]);
  });

  it("reports a failed background write on the next flush", async () => {
    const writer = new JournalWriter(async () => {
      throw new Error("lease lost");
    });
    writer.later(step(1, "completed"), true);
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    await expect(writer.before(step(2))).rejects.toThrow("lease lost");
  });
});

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
