import { describe, expect, it } from "vitest";
import { ApprovalExpiredError, defineAgent, defineTool } from "../src/index.ts";
import { forEachBackend } from "./helpers/backends.ts";

const DAY = 24 * 3600_000;

const agent = defineAgent({
  name: "slow",
  tools: {
    flaky: defineTool({
      retry: { initialIntervalMs: 60_000, maximumAttempts: 3 },
      run: async (ctx) => {
        if (ctx.attempt < 3) throw new Error(`attempt ${ctx.attempt} failed`);
        return ctx.attempt;
      },
    }),
  },
  workflows: {
    async month(ctx, _input: null) {
      const start = await ctx.now();
      for (let day = 0; day < 30; day++) await ctx.sleep(DAY);
      const end = await ctx.now();
      return { days: (end.getTime() - start.getTime()) / DAY };
    },
    async approval(ctx, _input: null) {
      try {
        await ctx.requestApproval({ action: "ship", payload: { v: 1 }, expiresInMs: 48 * 3600_000 });
        return "approved";
      } catch (error) {
        if (error instanceof ApprovalExpiredError) return "expired";
        throw error;
      }
    },
    async retries(ctx, _input: null) {
      return ctx.tool("flaky", {});
    },
  },
});

forEachBackend((under) => {
  const { runtimes } = under;
  describe("TestRuntime: a virtual clock", () => {
    it("runs a workflow that sleeps 30 days in milliseconds", async () => {
      const t = runtimes.makeTest({ agents: [agent] });
      const virtualStart = t.clock.now();
      const run = await t.run(agent, "month", null);
      const ended = await t.settle(run.id);
      expect(ended.state).toBe("COMPLETED");
      expect(ended.output).toEqual({ days: 30 });
      // The workflow's clock went 30 days on; the test's own timeout bounds the wall time (no timed
      // assertion: under a loaded CI the 30 pauses and resumes on PostgreSQL took 0.5 to 6 s).
      expect(t.clock.now() - virtualStart).toBeGreaterThanOrEqual(30 * DAY);
      const waits = await t.waits(run.id);
      expect(waits.filter((w) => w.kind === "timer")).toHaveLength(30);
      await t.shutdown();
    });

    it("lets an approval that expires in 48 hours expire", async () => {
      const t = runtimes.makeTest({ agents: [agent] });
      const run = await t.run(agent, "approval", null);
      const paused = await t.settle(run.id, { skipTimers: false });
      expect(paused.pausedReason).toBe("awaiting_approval");
      const t0 = t.clock.now();
      const ended = await t.settle(run.id);
      expect(ended.output).toBe("expired");
      expect(t.clock.now() - t0).toBe(48 * 3600_000);
      await t.shutdown();
    });

    it("pauses long retry backoffs on a durable timer (awaiting_retry)", async () => {
      const t = runtimes.makeTest({ agents: [agent] });
      const run = await t.run(agent, "retries", null);
      const ended = await t.settle(run.id);
      expect(ended.output).toBe(3);
      const history = await t.history(run.id);
      expect(history.transitions.filter((tr) => tr.pausedReason === "awaiting_retry")).toHaveLength(2);
      expect(history.waits.map((w) => w.id)).toEqual(["r1.2", "r1.3"]);
      await t.shutdown();
    });
  });

  describe("TestRuntime with the expense example", () => {
    it("answers, then lets the 48-hour approval expire: the run ends BLOCKED", async () => {
      const { expenses } = await import("../examples/expense-approval.ts");
      const t = runtimes.makeTest({ agents: [expenses] });
      const run = await t.run(expenses, "submit", { employee: "ana", amount: 420, purpose: "client dinner" });
      expect((await t.settle(run.id, { skipTimers: false })).pausedReason).toBe("awaiting_user");
      await t.answer(run.id, "w2", { costCenter: "CC-1001" });
      const ended = await t.settle(run.id);
      expect(ended.state).toBe("BLOCKED");
      expect(ended.error?.code).toBe("APPROVAL_EXPIRED");
      await t.shutdown();
    });
  });
});
