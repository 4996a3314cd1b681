import { describe, expect, it } from "vitest";
import type { Policy } from "../src/index.ts";
import { defineAgent, defineTool, ScriptedModel } from "../src/index.ts";
import { forEachBackend } from "./helpers/backends.ts";

/**
 * Governance (DESIGN §6): policies see every call before it runs (allow, deny → BLOCKED naming
 * the policy and its version, require approval); budgets are checked before each step and
 * settled after it (BLOCKED with the figure and the limit); usage and cost are recorded per model
 * call and summed per run; a child gets at most what its parent has left.
 */

function looper(name: string, ran: string[]) {
  return defineAgent({
    name,
    tools: {
      tick: defineTool({
        run: async (_ctx, args: { i: number }) => {
          ran.push(`tick ${args.i}`);
          return args.i;
        },
      }),
      wipe: defineTool({
        run: async () => {
          ran.push("wipe");
          return "wiped";
        },
      }),
    },
    workflows: {
      async loop(ctx, _input: null) {
        for (let i = 1; ; i++) await ctx.tool("tick", { i });
      },
      async dangerous(ctx, _input: null) {
        await ctx.tool("tick", { i: 1 });
        return ctx.tool("wipe", {});
      },
      async parent(ctx, _input: null) {
        await ctx.tool("tick", { i: 0 });
        const child = await ctx.spawn(name, "loop", null);
        return child.result();
      },
    },
  });
}

const noWipes: Policy = {
  name: "no_wipes",
  version: "3",
  check: (call) =>
    call.kind === "tool" && call.name === "wipe" ? { deny: "wiping is not allowed from agents" } : "allow",
};

forEachBackend((under) => {
  const { runtimes } = under;

  describe("budgets", () => {
    it("stops a looping workflow at exactly its tool-call limit: BLOCKED, figure and limit in the reason", async () => {
      const ran: string[] = [];
      const rt = runtimes.make({ agents: [looper("loop_budget", ran)] });
      const handle = await rt.run("loop_budget", "loop", null, { budget: { toolCalls: 5 } });
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("BLOCKED");
      expect(run.error).toMatchObject({ code: "BUDGET_EXCEEDED", data: { budget: "toolCalls", figure: 6, limit: 5 } });
      expect(ran).toEqual(["tick 1", "tick 2", "tick 3", "tick 4", "tick 5"]);
      const last = (await rt.history(handle.id)).transitions.at(-1);
      expect(last?.to).toBe("BLOCKED");
      expect(last?.reason).toContain("BUDGET_EXCEEDED");
      expect(last?.reason).toContain("number 6, the limit is 5");
      expect(run.usage).toMatchObject({ toolCalls: 5, steps: 5 });
    });

    it("takes the agent's default budget, overridden per run and key", async () => {
      const ran: string[] = [];
      const base = looper("loop_default", ran);
      const agent = defineAgent({ ...base, name: "loop_default", budget: { toolCalls: 2, steps: 100 } });
      const rt = runtimes.make({ agents: [agent] });
      const a = await rt.run("loop_default", "loop", null);
      expect((await rt.waitFor(a.id)).error?.data).toMatchObject({ budget: "toolCalls", limit: 2 });
      const b = await rt.run("loop_default", "loop", null, { budget: { toolCalls: 3 } });
      expect((await rt.waitFor(b.id)).error?.data).toMatchObject({ budget: "toolCalls", limit: 3 });
      expect(ran).toHaveLength(5);
    });

    it("refuses a bad budget with a clear error and starts nothing", async () => {
      const rt = runtimes.make({ agents: [looper("loop_bad", [])] });
      await expect(rt.run("loop_bad", "loop", null, { budget: { toolCalls: -1 } })).rejects.toThrow(/toolCalls/);
      await expect(rt.run("loop_bad", "loop", null, { budget: { tokenz: 5 } as never })).rejects.toThrow(/tokenz/);
      expect(await rt.listRuns()).toEqual([]);
    });

    it("gives a child at most what its parent has left; the parent sees the child blocked", async () => {
      const ran: string[] = [];
      const rt = runtimes.make({ agents: [looper("loop_family", ran)] });
      const handle = await rt.run("loop_family", "parent", null, { budget: { toolCalls: 4 } });
      const parent = await rt.waitFor(handle.id);
      const child = await rt.getRun(`${handle.id}.2`);
      expect(child.meta.budget).toEqual({ toolCalls: 3 });
      expect(child.state).toBe("BLOCKED");
      expect(ran).toEqual(["tick 0", "tick 1", "tick 2", "tick 3"]);
      // The child's ending (with its usage) reaches the parent; unhandled, it fails the parent.
      expect(parent.state).toBe("FAILED");
      expect(parent.usage?.toolCalls).toBe(4);
    });

    it("records model usage and cost per call, sums them per run, and refuses a call whose maximum output would overshoot", async () => {
      const model = new ScriptedModel({ name: "priced-model", replies: ["four words of reply"] });
      const agent = defineAgent({
        name: "priced",
        tools: {},
        workflows: {
          async talk(ctx, input: { max?: number }) {
            const a = await ctx.llm.generate({ prompt: "one two three" });
            const b = await ctx.llm.generate({ prompt: "again", ...(input.max ? { maxOutputTokens: input.max } : {}) });
            return [a, b];
          },
        },
      });
      const rt = runtimes.make({
        agents: [agent],
        models: { default: model },
        prices: { "priced-model": { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 } },
      });
      const ok = await rt.run("priced", "talk", {});
      await ok.result();
      const history = await rt.history(ok.id);
      const costs = history.steps.map((s) => s.usage?.costUsd);
      expect(costs.every((c) => typeof c === "number" && c > 0)).toBe(true);
      const total = history.steps.reduce((sum, s) => sum + (s.usage?.costUsd ?? 0), 0);
      expect(history.run.usage?.costUsd).toBeCloseTo(total, 9);
      expect(history.run.usage?.modelCalls).toBe(2);

      const calls = model.calls;
      const capped = await rt.run("priced", "talk", { max: 1000 }, { budget: { costUsd: total + 5 } });
      const run = await rt.waitFor(capped.id);
      expect(run.state).toBe("BLOCKED");
      expect(run.error).toMatchObject({ code: "BUDGET_EXCEEDED", data: { budget: "costUsd" } });
      // The first call was made; the second, whose 1,000 tokens could cost $2,000, never was.
      expect(model.calls).toBe(calls + 1);
    });
  });

  describe("policies", () => {
    it("blocks a denied tool before it runs, naming the policy and its version", async () => {
      const ran: string[] = [];
      const rt = runtimes.make({ agents: [looper("guarded", ran)], policies: [noWipes] });
      const handle = await rt.run("guarded", "dangerous", null);
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("BLOCKED");
      expect(run.error).toMatchObject({ code: "POLICY_DENIED", data: { policy: "no_wipes", policyVersion: "3" } });
      expect(run.error?.message).toContain('policy "no_wipes"@3 denied tool "wipe"');
      expect(ran).toEqual(["tick 1"]);
      const history = await rt.history(handle.id);
      expect(history.steps.map((s) => s.name)).toEqual(["tick"]);
      expect(history.transitions.every((t) => t.versions.policy === "no_wipes@3")).toBe(true);
      expect(run.versions.policy).toBe("no_wipes@3");
    });

    it("a workflow cannot swallow a denial", async () => {
      const ran: string[] = [];
      const base = looper("swallower", ran);
      const agent = defineAgent({
        name: "swallower",
        tools: base.tools,
        workflows: {
          async go(ctx, _input: null) {
            try {
              await ctx.tool("wipe", {});
            } catch {
              // ignored on purpose
            }
            return ctx.tool("tick", { i: 9 });
          },
        },
      });
      const rt = runtimes.make({ agents: [agent], policies: [noWipes] });
      const run = await rt.waitFor((await rt.run("swallower", "go", null)).id);
      expect(run.state).toBe("BLOCKED");
      expect(ran).toEqual([]);
    });

    it("requires an approval when a policy says so, bound to the call's arguments", async () => {
      const ran: string[] = [];
      const reviewWipes: Policy = {
        name: "review_wipes",
        version: "1",
        check: (call) =>
          call.kind === "tool" && call.name === "wipe"
            ? { requireApproval: { approvers: ["ops"], expiresInMs: 60_000 } }
            : "allow",
      };
      const rt = runtimes.make({ agents: [looper("reviewed", ran)], policies: [reviewWipes] });
      const handle = await rt.run("reviewed", "dangerous", null);
      const deadline = Date.now() + 5000;
      let paused = await rt.getRun(handle.id);
      while (paused.state !== "PAUSED" && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 10));
        paused = await rt.getRun(handle.id);
      }
      expect(paused.pausedReason).toBe("awaiting_approval");
      expect(ran).toEqual(["tick 1"]);
      const approval = (await rt.waits(handle.id)).find((w) => w.kind === "approval");
      if (!approval) throw new Error("no approval wait");
      expect(approval.name).toBe("policy:review_wipes:tool:wipe");
      const digest = (approval.details as { digest: string }).digest;
      await rt.approve(handle.id, approval.id, { by: "ops", digest });
      expect(await handle.result()).toBe("wiped");
      expect(ran).toEqual(["tick 1", "wipe"]);
    });
  });
});

forEachBackend((under) => {
  describe("policy versions", () => {
    it("are recorded on the run and checked on resume: a change is named on the resuming transition", async () => {
      const ran: string[] = [];
      const agent = defineAgent({
        name: "versioned_policies",
        tools: { tick: defineTool({ run: async (_ctx, a: { i: number }) => ran.push(`tick ${a.i}`) }) },
        workflows: {
          async go(ctx, _input: null) {
            await ctx.tool("tick", { i: 1 });
            await ctx.waitForSignal("go on");
            return ctx.tool("tick", { i: 2 });
          },
        },
      });
      const backend = under.backend();
      const v1: Policy = { name: "limits", version: "1", check: () => "allow" };
      const first = under.runtimes.make({ agents: [agent], backend, policies: [v1] });
      const handle = await first.run("versioned_policies", "go", null);
      const deadline = Date.now() + 5000;
      while ((await first.getRun(handle.id)).state !== "PAUSED" && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect((await first.getRun(handle.id)).versions.policy).toBe("limits@1");
      await first.shutdown();
      const v2: Policy = {
        name: "limits",
        version: "2",
        check: (call) =>
          call.name === "tick" && (call.args as { i: number }).i === 2 ? { deny: "no second tick" } : "allow",
      };
      const second = under.runtimes.make({ agents: [agent], backend, policies: [v2] });
      await second.signal(handle.id, "go on", null);
      const run = await second.waitFor(handle.id);
      expect(run.state).toBe("BLOCKED");
      expect(run.error?.message).toContain('policy "limits"@2');
      expect(ran).toEqual(["tick 1"]);
      const resumed = (await second.history(handle.id)).transitions.filter((t) => t.from === "RESUMING");
      expect(resumed.at(-1)?.reason).toContain("policies changed since the run started (limits@1 -> limits@2)");
    });
  });
});
