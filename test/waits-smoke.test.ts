import { describe, expect, it } from "vitest";
import { z } from "zod";
import { approvalDigest } from "../src/core/approval-digest.ts";
import { defineAgent, defineTool } from "../src/index.ts";
import { forEachBackend } from "./helpers/backends.ts";
import { untilState } from "./helpers/runtime-helpers.ts";

const agent = defineAgent({
  name: "hitl",
  tools: {
    echo: defineTool({ run: async (_ctx, args: { v: number }) => args.v * 2 }),
    pay: defineTool({
      approval: { expiresInMs: 60_000, approvers: ["alice"] },
      run: async (_ctx, args: { amount: number }) => ({ paid: args.amount }),
    }),
  },
  workflows: {
    async signal(ctx, _input: null) {
      const a = await ctx.tool("echo", { v: 1 });
      const s = await ctx.waitForSignal<{ x: number }>("go");
      return a + s.x;
    },
    async ask(ctx, _input: null) {
      const n = await ctx.askUser("how many?", { schema: z.object({ n: z.number().min(1) }) });
      return n.n;
    },
    async sleep(ctx, _input: null) {
      await ctx.sleep(50);
      return "slept";
    },
    async pay(ctx, _input: null) {
      return ctx.tool("pay", { amount: 5 });
    },
    async parent(ctx, _input: null) {
      const child = await ctx.spawn("hitl", "sleep", null);
      return { child: await child.result() };
    },
  },
});

forEachBackend((under) => {
  const { runtimes } = under;
  describe("waits smoke", () => {
    it("signal", async () => {
      const rt = runtimes.make({ agents: [agent] });
      const h = await rt.run(agent, "signal", null);
      await untilState(rt.backend, h.id, "PAUSED");
      expect((await rt.getRun(h.id)).state).toBe("PAUSED");
      await rt.signal(h.id, "go", { x: 40 }, { messageId: "m1" });
      const dup = await rt.signal(h.id, "go", { x: 1 }, { messageId: "m1" });
      expect(dup.duplicate).toBe(true);
      expect(await h.result({ timeoutMs: 5000 })).toBe(42);
      await rt.shutdown();
    });
    it("ask", async () => {
      const rt = runtimes.make({ agents: [agent] });
      const h = await rt.run(agent, "ask", null);
      await untilState(rt.backend, h.id, "PAUSED");
      const waits = await rt.waits(h.id);
      expect(waits[0]?.kind).toBe("user");
      await expect(rt.answer(h.id, waits[0]!.id, { n: 0 })).rejects.toThrow(/n: Too small/);
      await rt.answer(h.id, waits[0]!.id, { n: 3 });
      expect(await h.result({ timeoutMs: 5000 })).toBe(3);
      await rt.shutdown();
    });
    it("sleep", async () => {
      const rt = runtimes.make({ agents: [agent] });
      const h = await rt.run(agent, "sleep", null);
      expect(await h.result({ timeoutMs: 5000 })).toBe("slept");
      const hist = await rt.history(h.id);
      expect(hist.transitions.map((t) => t.to)).toEqual([
        "PENDING",
        "RUNNING",
        "PAUSED",
        "RESUMING",
        "RUNNING",
        "COMPLETED",
      ]);
      await rt.shutdown();
    });
    it("tool approval", async () => {
      const rt = runtimes.make({ agents: [agent] });
      const h = await rt.run(agent, "pay", null);
      await untilState(rt.backend, h.id, "PAUSED");
      const [w] = await rt.waits(h.id);
      await expect(rt.approve(h.id, w!.id, { by: "bob", digest: approvalDigest({ amount: 5 }) })).rejects.toThrow(
        /approvers/,
      );
      await expect(rt.approve(h.id, w!.id, { by: "alice", digest: "x" })).rejects.toThrow(/digest/);
      await rt.approve(h.id, w!.id, { by: "alice", digest: approvalDigest({ amount: 5 }) });
      expect(await h.result({ timeoutMs: 5000 })).toEqual({ paid: 5 });
      await rt.shutdown();
    });
    it("child", async () => {
      const rt = runtimes.make({ agents: [agent] });
      const h = await rt.run(agent, "parent", null);
      expect(await h.result({ timeoutMs: 5000 })).toEqual({ child: "slept" });
      await rt.shutdown();
    });
    it("cancel paused", async () => {
      const rt = runtimes.make({ agents: [agent] });
      const h = await rt.run(agent, "signal", null);
      await untilState(rt.backend, h.id, "PAUSED");
      await rt.cancel(h.id, { by: "ops", reason: "no longer needed" });
      const end = await rt.waitFor(h.id, { timeoutMs: 5000 });
      expect(end.state).toBe("CANCELLED");
      await rt.shutdown();
    });
  });
});
