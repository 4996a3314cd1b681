import { describe, expect, it } from "vitest";
import { defineAgent, defineTool } from "../src/index.ts";
import { forEachBackend } from "./helpers/backends.ts";

forEachBackend((under) => {
  const { runtimes } = under;
  describe("continueAsNew", () => {
    const chat = defineAgent({
      name: "chat",
      tools: { add: defineTool({ run: async (_ctx, { a, b }: { a: number; b: number }) => a + b }) },
      workflows: {
        async session(ctx, input: { turn: number; total: number }) {
          const total = await ctx.tool("add", { a: input.total, b: input.turn });
          if (input.turn >= 3) return { total, turns: input.turn };
          return ctx.continueAsNew({ turn: input.turn + 1, total });
        },
      },
    });

    it("ends the run and starts its successor with the same key, linked both ways; result() follows the chain", async () => {
      const rt = runtimes.make({ agents: [chat] });
      const first = await rt.run(chat, "session", { turn: 1, total: 0 }, { key: "s-1" });
      expect(await first.result({ timeoutMs: 5000 })).toEqual({ total: 6, turns: 3 });
      const one = await rt.getRun(first.id);
      expect(one.state).toBe("COMPLETED");
      expect(one.continuedTo).toBeTruthy();
      expect(one.output).toEqual({ continuedAs: one.continuedTo });
      const two = await rt.getRun(one.continuedTo as string);
      expect(two.continuedFrom).toBe(one.id);
      expect(two.key).toBe("s-1");
      const three = await rt.getRun(two.continuedTo as string);
      expect(three.continuedTo).toBeNull();
      expect(three.output).toEqual({ total: 6, turns: 3 });
      // Each run's journal holds its own steps only.
      expect((await rt.history(three.id)).steps).toHaveLength(1);
      // The key now names the newest run of the chain.
      const again = await rt.run(chat, "session", { turn: 1, total: 0 }, { key: "s-1" });
      expect(again.created).toBe(false);
      expect(again.id).toBe(three.id);
      expect(await first.result({ followContinuations: false })).toEqual({ continuedAs: two.id });
      await rt.shutdown();
    });
  });

  describe("limits", () => {
    it("stops a run at maxSteps with an error that suggests continueAsNew, after a warning at 80 %", async () => {
      const warnings: string[] = [];
      const looping = defineAgent({
        name: "looping",
        tools: { noop: defineTool({ run: async () => null }) },
        workflows: {
          async forever(ctx, _input: null) {
            for (;;) await ctx.tool("noop", {});
          },
        },
      });
      const rt = runtimes.make({
        agents: [looping],
        maxSteps: 20,
        logger: { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error() {} },
      });
      const run = await rt.run(looping, "forever", null);
      const ended = await rt.waitFor(run.id, { timeoutMs: 5000 });
      expect(ended.state).toBe("FAILED");
      expect(ended.error?.code).toBe("STEP_LIMIT");
      expect(ended.error?.message).toMatch(/continueAsNew/);
      expect(warnings.some((w) => /16 of its 20 steps/.test(w))).toBe(true);
      expect((await rt.history(run.id)).steps).toHaveLength(20);
      await rt.shutdown();
    });
  });

  describe("versioning", () => {
    const v1 = defineAgent({
      name: "versioned",
      version: "1",
      tools: { a: defineTool({ run: async () => "a" }), b: defineTool({ run: async () => "b" }) },
      workflows: {
        async flow(ctx, _input: null) {
          const first = await ctx.tool("a", {});
          const signal = await ctx.waitForSignal<string>("go");
          return [first, signal];
        },
      },
    });
    const v2 = defineAgent({
      name: "versioned",
      version: "2",
      compatibleVersions: ["1"],
      tools: v1.tools,
      workflows: {
        async flow(ctx, _input: null) {
          const first = await ctx.tool("a", {});
          // The new code path for runs that get here with v2; runs of v1 are past this point.
          const extra = ctx.patched("add-b") ? await ctx.tool("b", {}) : "old";
          const signal = await ctx.waitForSignal<string>("go");
          return [first, extra, signal];
        },
      },
    });
    const v3 = defineAgent({ ...v2, version: "3", compatibleVersions: ["2"] } as typeof v2);

    it("ctx.patched: runs started before a change keep the old path, new runs take the new one", async () => {
      const backend = under.backend();
      const old = runtimes.make({ agents: [v1], backend });
      const before = await old.run(v1, "flow", null);
      for (let i = 0; i < 100 && (await old.getRun(before.id)).state !== "PAUSED"; i++)
        await new Promise((r) => setTimeout(r, 5));
      await old.shutdown();
      const next = runtimes.make({ agents: [v2], backend });
      const after = await next.run(v2, "flow", null);
      for (let i = 0; i < 100 && (await next.getRun(after.id)).state !== "PAUSED"; i++)
        await new Promise((r) => setTimeout(r, 5));
      await next.signal(before.id, "go", "x");
      await next.signal(after.id, "go", "y");
      expect(await next.handle(before.id).result({ timeoutMs: 5000 })).toEqual(["a", "old", "x"]);
      expect(await next.handle(after.id).result({ timeoutMs: 5000 })).toEqual(["a", "b", "y"]);
      await next.shutdown();
    });

    it("a run whose version the deployed code does not accept fails loudly and resumes once it does", async () => {
      const backend = under.backend();
      const old = runtimes.make({ agents: [v1], backend });
      const run = await old.run(v1, "flow", null);
      for (let i = 0; i < 100 && (await old.getRun(run.id)).state !== "PAUSED"; i++)
        await new Promise((r) => setTimeout(r, 5));
      await old.shutdown();
      const wrong = runtimes.make({ agents: [v3], backend });
      await wrong.signal(run.id, "go", "z");
      const failed = await wrong.waitFor(run.id, { timeoutMs: 5000 });
      expect(failed.state).toBe("FAILED");
      expect(failed.error?.code).toBe("VERSION_MISMATCH");
      expect(failed.error?.message).toMatch(/started on version 1.*deployed code is version 3/);
      await wrong.shutdown();
      const fixed = runtimes.make({ agents: [v2], backend });
      await fixed.resume(run.id);
      expect(await fixed.handle(run.id).result({ timeoutMs: 5000 })).toEqual(["a", "old", "z"]);
      await fixed.shutdown();
    });
  });

  describe("a child that continues as new", () => {
    const family = defineAgent({
      name: "family",
      tools: {},
      workflows: {
        async counter(ctx, input: { n: number }) {
          if (input.n < 3) return ctx.continueAsNew({ n: input.n + 1 });
          return { counted: input.n };
        },
        async parent(ctx, _input: null) {
          const child = await ctx.spawn<{ counted: number }>("family", "counter", { n: 1 });
          return { child: await child.result() };
        },
      },
    });

    it("is followed along its chain by the parent's child.result()", async () => {
      const rt = runtimes.make({ agents: [family] });
      const run = await rt.run(family, "parent", null);
      expect(await run.result({ timeoutMs: 5000 })).toEqual({ child: { counted: 3 } });
      const waits = (await rt.history(run.id)).waits.filter((w) => w.kind === "child");
      expect(waits.length).toBeGreaterThanOrEqual(1);
      expect(waits.every((w) => w.status === "resolved")).toBe(true);
      await rt.shutdown();
    });
  });
});
