import { describe, expect, it } from "vitest";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import type { RuntimeBackend } from "../src/backend/backend.ts";
import { StorageError } from "../src/core/errors.ts";
import type { StepRecord } from "../src/core/records.ts";
import { forEachBackend, intercept } from "./helpers/backends.ts";
import { untilState } from "./helpers/runtime-helpers.ts";

/**
 * Fails the first saveSteps that carries the start record of step `seq`, the way a transient
 * storage error (SQLITE_BUSY past the busy timeout, a dropped Postgres connection) would.
 */
function flakyBackend(inner: RuntimeBackend, seq: number) {
  const flaky = {
    failed: false,
    writes: [] as { steps: string[]; sync: boolean }[],
    backend: intercept(inner, {
      async saveSteps(steps: readonly StepRecord[], options: { epoch: number; sync: boolean }): Promise<void> {
        flaky.writes.push({ steps: steps.map((s) => `${s.seq}:${s.status}`), sync: options.sync });
        if (!flaky.failed && steps.some((s) => s.seq === seq && s.status === "started")) {
          flaky.failed = true;
          throw new StorageError("SQLite saveSteps failed: database is locked (SQLITE_BUSY)");
        }
        return inner.saveSteps(steps, options);
      },
    }),
  };
  return flaky;
}

const worker = { leaseMs: 100, pollIntervalMs: 10 };

forEachBackend((under) => {
  const { runtimes } = under;
  describe("review: a failed journal write", () => {
    function agent(calls: Record<string, number>) {
      const tool = (name: string) =>
        defineTool({
          run: () => {
            calls[name] = (calls[name] ?? 0) + 1;
            return `${name}-result`;
          },
        });
      return defineAgent({
        name: "flaky_journal",
        tools: { one: tool("one"), two: tool("two"), three: tool("three") },
        workflows: {
          async plain(ctx) {
            const a = await ctx.tool("one", {});
            const b = await ctx.tool("two", {});
            return { a, b };
          },
          async catching(ctx) {
            const a = await ctx.tool("one", {});
            let b: unknown;
            try {
              b = await ctx.tool("two", {});
            } catch {
              b = "caught";
            }
            const c = await ctx.tool("three", {});
            return { a, b, c };
          },
        },
      });
    }

    it("does not turn a transient storage error into a FAILED run", async () => {
      const calls: Record<string, number> = {};
      const flaky = flakyBackend(under.backend(), 2);
      const { backend } = flaky;
      const rt = runtimes.make({ agents: [agent(calls)], backend, worker });
      const handle = await rt.run("flaky_journal", "plain", {});
      const run = await rt.waitFor(handle.id, { timeoutMs: 5000 });
      // Before the fix: FAILED with code STORAGE, which only a fork can get past.
      expect(run.error?.code).not.toBe("STORAGE");
      // The write failure stops the envelope; the run is handed back (INTERRUPTED) and recovered.
      const done = run.state === "COMPLETED" ? run : await untilState(backend, handle.id, "COMPLETED");
      expect(done.output).toEqual({ a: "one-result", b: "two-result" });
      expect(flaky.failed).toBe(true);
    });

    it("never lets a later step run, or the run complete, after a queued result failed to commit", async () => {
      const calls: Record<string, number> = {};
      const flaky = flakyBackend(under.backend(), 2);
      const { backend } = flaky;
      const rt = runtimes.make({ agents: [agent(calls)], backend, worker });
      const handle = await rt.run("flaky_journal", "catching", {});
      const done = await untilState(backend, handle.id, "COMPLETED");
      // Before the fix the workflow saw the storage error as tool two's failure, went on, ran tool
      // three and COMPLETED, with step 1's result (committed in the failed write) lost and step 2
      // missing from the journal of a completed run.
      expect(done.output).toEqual({ a: "one-result", b: "two-result", c: "three-result" });
      const steps = await backend.loadSteps(handle.id);
      expect(steps.map((s) => `${s.seq}:${s.status}`)).toEqual(["1:completed", "2:completed", "3:completed"]);
      expect(calls.three).toBe(1);
    });
  });

  describe("review: value steps seen by a later step", () => {
    it("commits a ctx.uuid() synchronously before a tool that received it runs", async () => {
      const flaky = flakyBackend(under.backend(), Number.NaN);
      const { backend } = flaky;
      let seenAtRun: { steps: string[]; sync: boolean }[] = [];
      const charger = defineAgent({
        name: "charger",
        tools: {
          charge: defineTool({
            run: (_ctx, { key }: { key: string }) => {
              seenAtRun = flaky.writes.map((w) => ({ ...w }));
              return `charged with idempotency key ${key}`;
            },
          }),
        },
        workflows: {
          async pay(ctx) {
            const key = await ctx.uuid();
            return ctx.tool("charge", { key });
          },
        },
      });
      const rt = runtimes.make({ agents: [charger], backend });
      const handle = await rt.run(charger, "pay", {});
      await handle.result();
      // The payment provider has seen the key by now: if it is lost (a power loss undoes commits
      // made with synchronous=NORMAL) the replay makes a new key and the payment is made twice.
      const carrying = seenAtRun.find((w) => w.steps.includes("1:completed"));
      expect(carrying).toBeDefined();
      expect(carrying?.sync).toBe(true);
    });
  });

  describe("steps still in flight when the workflow returns", () => {
    it("are abandoned: their signal fires and nothing is written after the run ends", async () => {
      let aborted = false;
      let finished = false;
      const agent = defineAgent({
        name: "floater",
        tools: {
          slow: defineTool({
            run: async (ctx) => {
              await new Promise<void>((resolve) => {
                const timer = setTimeout(resolve, 200);
                ctx.signal.addEventListener("abort", () => {
                  aborted = true;
                  clearTimeout(timer);
                  resolve();
                });
              });
              finished = true;
              return "late";
            },
          }),
          quick: defineTool({ run: () => "quick" }),
        },
        workflows: {
          async go(ctx) {
            void ctx.tool("slow", {}).catch(() => {});
            return ctx.tool("quick", {});
          },
        },
      });
      const backend = under.backend();
      const runtime = runtimes.make({ agents: [agent], backend });
      const handle = await runtime.run(agent, "go", {});
      expect(await handle.result()).toBe("quick");
      await new Promise((r) => setTimeout(r, 300));
      expect(aborted).toBe(true);
      expect(finished).toBe(true);
      const [slow, quick] = await backend.loadSteps(handle.id);
      // Its start was committed before it ran; nothing after the run's end.
      expect(slow?.status).toBe("started");
      expect(quick?.status).toBe("completed");
    });
  });
});
