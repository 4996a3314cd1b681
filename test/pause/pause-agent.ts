import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { ApprovalExpiredError, defineAgent, defineTool } from "../../src/index.ts";

/** The agent of the pause/resume crash tests. */
export const AGENT = "pause_agent";

/** The payload `ship` asks approval for, and who may approve it. */
export const SHIP_PAYLOAD = { order: "A-17", amount: 420 } as const;
export const SHIP_APPROVERS = ["alice", "bob"] as const;

/** How often `<countDir>/<name>` was executed (one byte per execution). */
export function executions(countDir: string, name: string): number {
  const file = join(countDir, name);
  return existsSync(file) ? readFileSync(file, "utf8").length : 0;
}

function count(countDir: string, name: string): number {
  appendFileSync(join(countDir, name), "x");
  return executions(countDir, name);
}

/**
 * One workflow per kind of pause. Every tool execution is counted in a file outside the
 * database (`<countDir>/<name>`), so a test can tell which tools ran again after a crash.
 */
export function pauseAgent(countDir: string) {
  return defineAgent({
    name: AGENT,
    tools: {
      /** Counts an execution under `name` and returns it. */
      step: defineTool({
        run: (_ctx, { name }: { name: string }) => {
          count(countDir, name);
          return name;
        },
      }),
      /** Marks that it started (`<name>.started`), takes `ms`, then counts. */
      slow: defineTool({
        run: async (_ctx, { name, ms }: { name: string; ms: number }) => {
          appendFileSync(join(countDir, `${name}.started`), "x");
          await new Promise((r) => setTimeout(r, ms));
          count(countDir, name);
          return name;
        },
      }),
      /** Fails on its first two executions (counted across processes), then succeeds. */
      flaky: defineTool({
        retry: { initialIntervalMs: 1500, backoffCoefficient: 1, jitter: 0, maximumAttempts: 5 },
        run: (ctx) => {
          const n = count(countDir, "flaky");
          if (n <= 2) throw new Error(`flaky failure ${n}`);
          return { attempt: ctx.attempt, executions: n };
        },
      }),
      /** Runs only once approved (by alice). */
      pay: defineTool({
        approval: { expiresInMs: 60_000, approvers: ["alice"] },
        run: (_ctx, { amount }: { amount: number }) => {
          count(countDir, "pay");
          return { paid: amount };
        },
      }),
    },
    workflows: {
      async signal(ctx, _input: null) {
        const before = await ctx.tool("step", { name: "before" });
        const go = await ctx.waitForSignal<{ go: number }>("go");
        const after = await ctx.tool("step", { name: "after" });
        return { before, go, after };
      },
      async ask(ctx, _input: null) {
        await ctx.tool("step", { name: "before" });
        const answer = await ctx.askUser("how many?", { schema: z.object({ n: z.number().int().min(1) }) });
        await ctx.tool("step", { name: "after" });
        return { n: answer.n };
      },
      async sleep(ctx, { ms }: { ms: number }) {
        await ctx.tool("step", { name: "before" });
        await ctx.sleep(ms);
        await ctx.tool("step", { name: "after" });
        return { slept: ms };
      },
      async approve(ctx, { expiresInMs }: { expiresInMs: number }) {
        await ctx.tool("step", { name: "before" });
        const decision = await ctx.requestApproval({
          action: "ship",
          payload: SHIP_PAYLOAD,
          approvers: SHIP_APPROVERS,
          expiresInMs,
        });
        await ctx.tool("step", { name: "after" });
        return { approvedBy: decision.by?.id ?? null };
      },
      /** Like `approve`, but an expired approval is handled: the run completes with a fallback. */
      async approveOrFallback(ctx, { expiresInMs }: { expiresInMs: number }) {
        await ctx.tool("step", { name: "before" });
        try {
          await ctx.requestApproval({ action: "ship", payload: SHIP_PAYLOAD, approvers: SHIP_APPROVERS, expiresInMs });
        } catch (error) {
          if (!(error instanceof ApprovalExpiredError)) throw error;
          const fallback = await ctx.tool("step", { name: "fallback" });
          return { shipped: false, fallback };
        }
        await ctx.tool("step", { name: "after" });
        return { shipped: true };
      },
      async payTool(ctx, { amount }: { amount: number }) {
        await ctx.tool("step", { name: "before" });
        const paid = await ctx.tool("pay", { amount });
        await ctx.tool("step", { name: "after" });
        return paid;
      },
      /** Spawns `child` and waits for its result (awaiting_child). */
      async parent(ctx, _input: null) {
        await ctx.tool("step", { name: "parent-before" });
        const child = await ctx.spawn<{ got: unknown }>(AGENT, "child", null);
        const result = await child.result();
        await ctx.tool("step", { name: "parent-after" });
        return { child: child.runId, result };
      },
      /**
       * Spawns `child` (default parent-close policy: suspend) and, once signalled "release",
       * returns without waiting for it.
       */
      async orphanParent(ctx, _input: null) {
        await ctx.tool("step", { name: "parent-before" });
        const child = await ctx.spawn(AGENT, "child", null);
        await ctx.waitForSignal("release");
        return { child: child.runId };
      },
      async child(ctx, _input: null) {
        await ctx.tool("step", { name: "child-before" });
        const got = await ctx.waitForSignal("go");
        await ctx.tool("step", { name: "child-after" });
        return { got };
      },
      async retry(ctx, _input: null) {
        await ctx.tool("step", { name: "before" });
        const flaky = await ctx.tool("flaky", {});
        await ctx.tool("step", { name: "after" });
        return { flaky };
      },
      /** Waits for signal "msg" twice. */
      async twice(ctx, _input: null) {
        await ctx.tool("step", { name: "before" });
        const first = await ctx.waitForSignal("msg");
        const second = await ctx.waitForSignal("msg");
        return [first, second];
      },
      /** A slow tool first, then a wait for signal "go" (which may have come during the tool). */
      async early(ctx, { ms }: { ms: number }) {
        await ctx.tool("slow", { name: "slow", ms });
        const go = await ctx.waitForSignal("go");
        return { go };
      },
    },
  });
}
