import { describe, expect, it } from "vitest";
import { CancelledError, defineAgent, defineTool, RunNotOpenError } from "../src/index.ts";
import { forEachBackend } from "./helpers/backends.ts";

function until(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  return (async () => {
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error("condition not met in time");
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
}

forEachBackend((under) => {
  const { runtimes } = under;
  describe("cancellation", () => {
    const seen: string[] = [];
    const agent = defineAgent({
      name: "canceller",
      tools: {
        quick: defineTool({ run: async () => "quick" }),
        long: defineTool({
          run: (ctx) =>
            new Promise((_resolve, reject) => {
              seen.push(`started ${ctx.attempt}`);
              ctx.signal.addEventListener("abort", () => {
                seen.push(`aborted: ${(ctx.signal.reason as Error).name}`);
                reject(ctx.signal.reason);
              });
            }),
        }),
        stubborn: defineTool({
          run: () => {
            seen.push("stubborn started");
            return new Promise(() => {});
          },
        }),
      },
      workflows: {
        async longTool(ctx, _input: null) {
          await ctx.tool("quick", {});
          return ctx.tool("long", {});
        },
        async ignoresSignal(ctx, _input: null) {
          return ctx.tool("stubborn", {});
        },
        async waits(ctx, _input: null) {
          return ctx.waitForSignal("never");
        },
      },
    });

    it("fires a running tool's AbortSignal and ends CANCELLED with what was in flight", async () => {
      const rt = runtimes.make({ agents: [agent] });
      const run = await rt.run(agent, "longTool", null);
      await until(async () => seen.includes("started 1"));
      await rt.cancel(run.id, { by: "ops", reason: "customer withdrew" });
      const ended = await rt.waitFor(run.id, { timeoutMs: 5000 });
      expect(ended.state).toBe("CANCELLED");
      expect(seen).toContain("aborted: CancelledError");
      expect(ended.error?.code).toBe("CANCELLED");
      expect(ended.error?.data).toMatchObject({
        by: "ops",
        reason: "customer withdrew",
        stopped: "after_step",
        inFlight: [{ seq: 2, kind: "tool", name: "long", outcome: "failed" }],
      });
      const { transitions, steps } = await rt.history(run.id);
      expect(transitions.map((t) => t.to)).toEqual(["PENDING", "RUNNING", "CANCELLING", "CANCELLED"]);
      expect(transitions[2]?.actor).toEqual({ kind: "user", id: "ops" });
      expect(transitions[3]?.reason).toMatch(/customer withdrew.*tool "long" \(step 2\): failed/);
      expect(steps.map((s) => [s.name, s.status])).toEqual([
        ["quick", "completed"],
        ["long", "failed"],
      ]);
      await rt.shutdown();
    });

    it("keeps the result of a tool that returns after the cancel reached it, and ends CANCELLED", async () => {
      // The tool asks for the cancel, waits until its signal says the worker has it, and returns
      // anyway. Its result is the workflow's last: the run ends CANCELLED, not COMPLETED, and the
      // result (queued to ride with a COMPLETED that does not come) is in its journal.
      let rt!: ReturnType<typeof runtimes.make>;
      const last = defineAgent({
        name: "last_word",
        tools: {
          finish: defineTool({
            run: async (ctx) => {
              await rt.cancel(ctx.runId, { by: "ops", reason: "too late" });
              await until(async () => ctx.signal.aborted);
              return "finished anyway";
            },
          }),
        },
        workflows: {
          async once(ctx, _input: null) {
            return ctx.tool("finish", {});
          },
        },
      });
      rt = runtimes.make({ agents: [last] });
      const run = await rt.run(last, "once", null);
      const ended = await rt.waitFor(run.id, { timeoutMs: 5000 });
      expect(ended.state).toBe("CANCELLED");
      const { transitions, steps } = await rt.history(run.id);
      expect(transitions.map((t) => t.to)).toEqual(["PENDING", "RUNNING", "CANCELLING", "CANCELLED"]);
      expect(steps.map((s) => [s.name, s.status, s.result])).toEqual([["finish", "completed", "finished anyway"]]);
      await rt.shutdown();
    });

    it("records an unknown outcome when a tool ignores its signal past the grace", async () => {
      const rt = runtimes.make({ agents: [agent], worker: { cancelGraceMs: 100 } });
      const run = await rt.run(agent, "ignoresSignal", null);
      // Cancelled while the tool runs (its start record alone could be committed before it does).
      await until(async () => seen.includes("stubborn started"));
      await rt.cancel(run.id, { by: "ops", reason: "stuck" });
      const ended = await rt.waitFor(run.id, { timeoutMs: 5000 });
      expect(ended.state).toBe("CANCELLED");
      expect(ended.error?.data).toMatchObject({
        stopped: "during_step",
        inFlight: [{ name: "stubborn", outcome: "unknown" }],
      });
      await rt.shutdown();
    });

    it("cancels a paused run and closes its waits; a pending one at once; an ended one is refused", async () => {
      const rt = runtimes.make({ agents: [agent] });
      const run = await rt.run(agent, "waits", null);
      await until(async () => (await rt.getRun(run.id)).state === "PAUSED");
      await rt.cancel(run.id, { by: "ops", reason: "not needed" });
      const ended = await rt.waitFor(run.id, { timeoutMs: 5000 });
      expect(ended.state).toBe("CANCELLED");
      expect(ended.error?.data).toMatchObject({ stopped: "before_step" });
      expect((await rt.waits(run.id)).map((w) => w.status)).toEqual(["closed"]);
      await expect(rt.cancel(run.id)).rejects.toBeInstanceOf(RunNotOpenError);
      await expect(rt.signal(run.id, "never", 1)).rejects.toBeInstanceOf(RunNotOpenError);
      await rt.shutdown();

      const client = runtimes.make({ agents: [agent], worker: false });
      const pending = await client.run(agent, "waits", null);
      const cancelled = await client.cancel(pending.id, { reason: "changed my mind" });
      expect(cancelled.state).toBe("CANCELLED");
      expect(cancelled.error?.data).toMatchObject({ stopped: "before_start" });
      await client.shutdown();
      expect(new CancelledError("x").code).toBe("CANCELLED");
    });
  });

  describe("cancelling a child", () => {
    it("ends it through a worker, so the parent waiting on it hears of it", async () => {
      const family = defineAgent({
        name: "family2",
        tools: {},
        workflows: {
          async child(ctx, _input: null) {
            return ctx.waitForSignal("never");
          },
          async parent(ctx, _input: null) {
            const child = await ctx.spawn("family2", "child", null);
            try {
              return await child.result();
            } catch (error) {
              return { childEnded: (error as { code?: string }).code };
            }
          },
        },
      });
      const rt = runtimes.make({ agents: [family] });
      const run = await rt.run(family, "parent", null);
      await until(async () => (await rt.getRun(run.id)).state === "PAUSED");
      await rt.cancel(`${run.id}.1`, { by: "ops", reason: "not needed" });
      expect(await run.result({ timeoutMs: 5000 })).toEqual({ childEnded: "RUN_CANCELLED" });
      await rt.shutdown();
    });

    it("refuses an answer that comes after the question timed out, even before a worker recorded the timeout", async () => {
      const timed = defineAgent({
        name: "timed",
        tools: {},
        workflows: {
          async ask(ctx, _input: null) {
            return ctx.askUser("q?", { timeoutMs: 400 }).catch((e: Error) => `timed out: ${e.name}`);
          },
        },
      });
      const { WaitClosedError } = await import("../src/index.ts");
      const backend = under.backend();
      const rt = runtimes.make({ agents: [timed], backend });
      const run = await rt.run(timed, "ask", null);
      await until(async () => (await rt.getRun(run.id)).state === "PAUSED");
      await rt.shutdown();
      // Past the question's timeout, with no worker left to record it. (The timeout is long enough
      // for a loaded machine to see the run PAUSED before its worker fires it.)
      await new Promise((r) => setTimeout(r, 450));
      const client = runtimes.make({ agents: [timed], backend, worker: false });
      await expect(client.answer(run.id, "w1", "late")).rejects.toBeInstanceOf(WaitClosedError);
      await client.shutdown();
      const worker = runtimes.make({ agents: [timed], backend });
      expect(await worker.handle(run.id).result({ timeoutMs: 5000 })).toBe("timed out: WaitTimeoutError");
      await worker.shutdown();
    });
  });
});
