import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import type { RuntimeBackend } from "../src/backend/backend.ts";
import {
  ContextOverflowError,
  EffectRefusedError,
  HeartbeatTimeoutError,
  InvalidInputError,
  ModelRequestError,
  NonRetryableError,
  RunNotResumableError,
  StepTimeoutError,
  ToolFailedError,
  UnknownNameError,
} from "../src/core/errors.ts";
import type { Json } from "../src/core/records.ts";
import { ReplayedError } from "../src/core/serialize.ts";
import { ScriptedModel } from "../src/llm/scripted-model.ts";
import { forEachBackend, type Runtimes } from "./helpers/backends.ts";
import { deferred, forever } from "./helpers/runtime-helpers.ts";

const fast = { initialIntervalMs: 1, jitter: 0 };

/** Notes a call and returns `value`. */
function record<T>(calls: string[], name: string, value: T): T {
  calls.push(name);
  return value;
}

/** What a workflow saw when it caught an error, kept outside the journal on purpose. */
interface Caught {
  name: string;
  code: unknown;
  message: string;
  isToolFailed: boolean;
  tool?: string;
  attempts?: number;
  causeName?: string | undefined;
}

function caught(error: unknown): Caught {
  const e = error as Error & { code?: unknown; tool?: string; attempts?: number };
  return {
    name: e.name,
    code: e.code,
    message: e.message,
    isToolFailed: error instanceof ToolFailedError,
    ...(error instanceof ToolFailedError ? { tool: e.tool, attempts: e.attempts } : {}),
    causeName: (e.cause as Error | undefined)?.name,
  };
}

forEachBackend((under) => {
  const { runtimes } = under;
  /**
   * Runs `start` in a first runtime until `entered` resolves (the workflow is inside a step that
   * never ends), shuts that runtime down (the run is recorded INTERRUPTED), and returns the run id.
   */
  async function interruptMidRun(options: {
    backend: RuntimeBackend;
    agent: Parameters<Runtimes["make"]>[0]["agents"][number];
    entered: Promise<void>;
    start: (rt: ReturnType<Runtimes["make"]>) => Promise<{ id: string }>;
    extra?: Omit<Parameters<Runtimes["make"]>[0], "agents" | "backend">;
  }): Promise<string> {
    const a = runtimes.make({ agents: [options.agent], backend: options.backend, ...options.extra });
    const handle = await options.start(a);
    await options.entered;
    await a.shutdown({ graceMs: 0 });
    const run = await options.backend.getRun(handle.id);
    expect(run?.state).toBe("INTERRUPTED");
    return handle.id;
  }

  /** A second runtime on the same backend that resumes explicitly (automatic recovery off). */
  function secondRuntime(
    backend: RuntimeBackend,
    agent: Parameters<Runtimes["make"]>[0]["agents"][number],
    extra: Omit<Parameters<Runtimes["make"]>[0], "agents" | "backend"> = {},
  ) {
    return runtimes.make({ agents: [agent], backend, worker: { maxAutoRecoveries: 0 }, ...extra });
  }

  describe("replay from checkpoints", () => {
    function pipeline(calls: { one: number; two: number; three: number }, block: Promise<void> | undefined) {
      const entered = deferred();
      const agent = defineAgent({
        name: "pipeline",
        tools: {
          one: defineTool({
            run: (_ctx, { n }: { n: number }) => {
              calls.one++;
              return n + 1;
            },
          }),
          two: defineTool({
            run: (_ctx, { n }: { n: number }) => {
              calls.two++;
              return n * 10;
            },
          }),
          three: defineTool({
            run: async (_ctx, { n }: { n: number }) => {
              calls.three++;
              if (block) {
                entered.resolve();
                await block;
              }
              return `done:${n}`;
            },
          }),
        },
        workflows: {
          async go(ctx, { start }: { start: number }) {
            const a = await ctx.tool("one", { n: start });
            const b = await ctx.tool("two", { n: a });
            const c = await ctx.tool("three", { n: b });
            return { a, b, c };
          },
        },
      });
      return { agent, entered: entered.promise };
    }

    it("does not run again a step with a saved result; the output equals an uncrashed run", async () => {
      const backend = under.backend();
      const callsA = { one: 0, two: 0, three: 0 };
      const a = pipeline(callsA, forever);
      const runId = await interruptMidRun({
        backend,
        agent: a.agent,
        entered: a.entered,
        start: (rt) => rt.run(a.agent, "go", { start: 4 }),
      });
      expect(callsA).toEqual({ one: 1, two: 1, three: 1 });
      const before = await backend.loadSteps(runId);
      expect(before.map((s) => [s.seq, s.name, s.status])).toEqual([
        [1, "one", "completed"],
        [2, "two", "completed"],
        [3, "three", "started"],
      ]);

      const callsB = { one: 0, two: 0, three: 0 };
      const b = pipeline(callsB, undefined);
      const rtB = secondRuntime(backend, b.agent);
      const resumed = await rtB.resume(runId);
      const output = await resumed.result();
      expect(callsB).toEqual({ one: 0, two: 0, three: 1 });

      const reference = pipeline({ one: 0, two: 0, three: 0 }, undefined);
      const rtC = runtimes.make({ agents: [reference.agent] });
      const uncrashed = await (await rtC.run(reference.agent, "go", { start: 4 })).result();
      expect(output).toEqual(uncrashed);
      expect(output).toEqual({ a: 5, b: 50, c: "done:50" });

      const { steps, transitions } = await rtB.history(runId);
      expect(steps.map((s) => [s.seq, s.name, s.status])).toEqual([
        [1, "one", "completed"],
        [2, "two", "completed"],
        [3, "three", "completed"],
      ]);
      // Steps 1-2 keep the epoch they were written under; step 3 was written by the new claim.
      expect(steps[0]?.epoch).toBe(before[0]?.epoch);
      expect(steps[2]?.epoch).toBeGreaterThan(before[2]?.epoch ?? Number.POSITIVE_INFINITY);
      expect(transitions.map((t) => `${t.from}->${t.to}`)).toEqual([
        "null->PENDING",
        "PENDING->RUNNING",
        "RUNNING->INTERRUPTED",
        "INTERRUPTED->RESUMING",
        "RESUMING->RUNNING",
        "RUNNING->COMPLETED",
      ]);
      expect(transitions.map((t) => t.id)).toEqual([1, 2, 3, 4, 5, 6]);
    });

    it("replays Promise.all with the same step numbers and results", async () => {
      const backend = under.backend();
      const make = (calls: string[], block: boolean) => {
        const entered = deferred();
        const agent = defineAgent({
          name: "fan_out",
          tools: {
            slow: defineTool({
              run: async (_ctx, { id, ms }: { id: string; ms: number }) => {
                calls.push(id);
                await new Promise((r) => setTimeout(r, ms));
                return `${id}@${ms}`;
              },
            }),
            last: defineTool({
              run: async (_ctx, { parts }: { parts: string[] }) => {
                calls.push("last");
                if (block) {
                  entered.resolve();
                  await forever;
                }
                return parts.join("+");
              },
            }),
          },
          workflows: {
            async go(ctx) {
              // Finishing order (y, z, x) differs from call order (x, y, z).
              const parts = await Promise.all([
                ctx.tool("slow", { id: "x", ms: 30 }),
                ctx.tool("slow", { id: "y", ms: 1 }),
                ctx.tool("slow", { id: "z", ms: 15 }),
              ]);
              return { parts, joined: await ctx.tool("last", { parts }) };
            },
          },
        });
        return { agent, entered: entered.promise };
      };
      const callsA: string[] = [];
      const a = make(callsA, true);
      const runId = await interruptMidRun({
        backend,
        agent: a.agent,
        entered: a.entered,
        start: (rt) => rt.run(a.agent, "go", {}),
      });
      const stepsA = await backend.loadSteps(runId);
      expect(stepsA.map((s) => [s.seq, s.name, s.args])).toEqual([
        [1, "slow", { id: "x", ms: 30 }],
        [2, "slow", { id: "y", ms: 1 }],
        [3, "slow", { id: "z", ms: 15 }],
        [4, "last", { parts: ["x@30", "y@1", "z@15"] }],
      ]);

      const callsB: string[] = [];
      const b = make(callsB, false);
      const rtB = secondRuntime(backend, b.agent);
      const output = await (await rtB.resume(runId)).result();
      expect(callsB).toEqual(["last"]);
      expect(output).toEqual({ parts: ["x@30", "y@1", "z@15"], joined: "x@30+y@1+z@15" });
      const stepsB = (await rtB.history(runId)).steps;
      expect(stepsB.slice(0, 3)).toEqual(stepsA.slice(0, 3));
    });

    it("returns the recorded ctx.now(), ctx.random() and ctx.uuid() on replay", async () => {
      const backend = under.backend();
      const make = (seen: Json[], block: boolean) => {
        const entered = deferred();
        const agent = defineAgent({
          name: "values",
          tools: {
            hold: defineTool({
              run: async (_ctx, values: Json) => {
                seen.push(values);
                if (block) {
                  entered.resolve();
                  await forever;
                }
                return "held";
              },
            }),
          },
          workflows: {
            async go(ctx) {
              const now = (await ctx.now()).toISOString();
              const random = await ctx.random();
              const uuid = await ctx.uuid();
              const values = { now, random, uuid };
              await ctx.tool("hold", values);
              return values;
            },
          },
        });
        return { agent, entered: entered.promise };
      };
      const seenA: Json[] = [];
      const a = make(seenA, true);
      const runId = await interruptMidRun({
        backend,
        agent: a.agent,
        entered: a.entered,
        start: (rt) => rt.run(a.agent, "go", {}),
      });
      await new Promise((r) => setTimeout(r, 5)); // so that a fresh ctx.now() would differ
      const seenB: Json[] = [];
      const b = make(seenB, false);
      const rtB = secondRuntime(backend, b.agent);
      const output = await (await rtB.resume(runId)).result();
      expect(seenA).toHaveLength(1);
      expect(output).toEqual(seenA[0]);
      expect(seenB).toEqual(seenA); // the tool of the second runtime got the same values
      const steps = (await rtB.history(runId)).steps;
      expect(steps.slice(0, 3).map((s) => [s.kind, s.name])).toEqual([
        ["value", "now"],
        ["value", "random"],
        ["value", "uuid"],
      ]);
      const out = output as { now: string; random: number; uuid: string };
      expect(new Date(steps[0]?.result as number).toISOString()).toBe(out.now);
      expect(steps[1]?.result).toBe(out.random);
      expect(out.random).toBeGreaterThanOrEqual(0);
      expect(out.random).toBeLessThan(1);
      expect(out.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    });

    it("replays domain reads and model calls without calling the provider or the model again", async () => {
      const backend = under.backend();
      const make = (block: boolean) => {
        const entered = deferred();
        const agent = defineAgent({
          name: "reader",
          tools: {
            hold: defineTool({
              run: async () => {
                if (block) {
                  entered.resolve();
                  await forever;
                }
                return "ok";
              },
            }),
          },
          workflows: {
            async go(ctx, { quarter }: { quarter: string }) {
              const data = await ctx.domain<{ revenue: number }>("finance", "quarterly", { quarter });
              const summary = await ctx.llm.generate({ prompt: `Summarize revenue ${data.revenue} for ${quarter}` });
              await ctx.tool("hold", {});
              return { data, summary };
            },
          },
        });
        return { agent, entered: entered.promise };
      };
      let domainCallsA = 0;
      const modelA = new ScriptedModel({ replies: ["Revenue was twelve."] });
      const a = make(true);
      const runId = await interruptMidRun({
        backend,
        agent: a.agent,
        entered: a.entered,
        start: (rt) => rt.run(a.agent, "go", { quarter: "Q3" }),
        extra: {
          domains: {
            finance: {
              quarterly: async (p) => {
                domainCallsA++;
                return { revenue: 12, ...p };
              },
            },
          },
          models: { default: modelA },
        },
      });
      expect(domainCallsA).toBe(1);
      expect(modelA.calls).toBe(1);

      let domainCallsB = 0;
      const modelB = new ScriptedModel({ replies: ["A different answer."] });
      const b = make(false);
      const rtB = secondRuntime(backend, b.agent, {
        domains: {
          finance: {
            quarterly: async () => {
              domainCallsB++;
              return { revenue: -1 };
            },
          },
        },
        models: { default: modelB },
      });
      const output = await (await rtB.resume(runId)).result();
      expect(domainCallsB).toBe(0);
      expect(modelB.calls).toBe(0);
      expect(output).toEqual({ data: { revenue: 12, quarter: "Q3" }, summary: "Revenue was twelve." });

      const [domainStep, llmStep] = (await rtB.history(runId)).steps;
      expect(domainStep).toMatchObject({ kind: "domain", name: "finance.quarterly", status: "completed" });
      // Named by the model key the code asked for; the provider that answered is in the result.
      expect(llmStep).toMatchObject({ kind: "llm", name: "default", status: "completed" });
      expect(llmStep?.result).toMatchObject({ model: "scripted" });
      // "Summarize revenue 12 for Q3" is 5 words in, "Revenue was twelve." 3 words out.
      expect(llmStep?.usage).toEqual({ inputTokens: 5, outputTokens: 3, modelCalls: 1, costUsd: 0 });
    });
  });

  describe("replay divergence", () => {
    function versioned(secondTool: "beta" | "gamma", block: boolean) {
      const entered = deferred();
      const calls: string[] = [];
      const agent = defineAgent({
        name: "evolving",
        tools: {
          alpha: defineTool({ run: () => record(calls, "alpha", "a") }),
          beta: defineTool({ run: () => record(calls, "beta", "b") }),
          gamma: defineTool({ run: () => record(calls, "gamma", "g") }),
          hold: defineTool({
            run: async () => {
              calls.push("hold");
              if (block) {
                entered.resolve();
                await forever;
              }
              return "h";
            },
          }),
        },
        workflows: {
          async go(ctx) {
            const first = await ctx.tool("alpha", {});
            const second = await ctx.tool(secondTool, {});
            const third = await ctx.tool("hold", {});
            return [first, second, third];
          },
        },
      });
      return { agent, calls, entered: entered.promise };
    }

    it("fails the run with REPLAY_DIVERGENCE naming both steps, and can be resumed once the code is fixed", async () => {
      const backend = under.backend();
      const v1 = versioned("beta", true);
      const runId = await interruptMidRun({
        backend,
        agent: v1.agent,
        entered: v1.entered,
        start: (rt) => rt.run(v1.agent, "go", {}),
      });

      // The code changed: step 2 is now "gamma".
      const v2 = versioned("gamma", false);
      const rtB = secondRuntime(backend, v2.agent);
      await rtB.resume(runId);
      const failed = await rtB.waitFor(runId, { timeoutMs: 5000 });
      expect(failed.state).toBe("FAILED");
      expect(failed.error?.code).toBe("REPLAY_DIVERGENCE");
      expect(failed.error?.message).toContain('tool "beta"');
      expect(failed.error?.message).toContain('tool "gamma"');
      expect(failed.error?.message).toContain("step 2");
      expect(failed.leaseOwner).toBeNull();
      expect(v2.calls).toEqual([]); // nothing ran: alpha was replayed, gamma refused
      const tail = (await rtB.history(runId)).transitions.at(-1);
      expect(tail).toMatchObject({ from: "RUNNING", to: "FAILED" });
      expect(tail?.reason).toContain("REPLAY_DIVERGENCE");
      await rtB.shutdown({ graceMs: 0 });

      // Code that calls the recorded steps again resumes the run to completion.
      const v3 = versioned("beta", false);
      const rtC = secondRuntime(backend, v3.agent);
      const output = await (await rtC.resume(runId)).result();
      expect(output).toEqual(["a", "b", "h"]);
      expect(v3.calls).toEqual(["hold"]);
      const done = await rtC.getRun(runId);
      expect(done.state).toBe("COMPLETED");
      expect(done.error).toBeUndefined();
      const path = (await rtC.history(runId)).transitions.map((t) => t.to);
      expect(path.slice(-4)).toEqual(["FAILED", "RESUMING", "RUNNING", "COMPLETED"]);
    });

    it("fails with REPLAY_DIVERGENCE when the code stops before completed steps it used to reach", async () => {
      const backend = under.backend();
      const entered = deferred();
      const long = defineAgent({
        name: "shrinking",
        tools: {
          a: defineTool({ run: () => 1 }),
          b: defineTool({ run: () => 2 }),
          hold: defineTool({
            run: () => {
              entered.resolve();
              return forever;
            },
          }),
        },
        workflows: {
          async go(ctx) {
            await ctx.tool("a", {});
            await ctx.tool("b", {});
            return ctx.tool("hold", {});
          },
        },
      });
      const runId = await interruptMidRun({
        backend,
        agent: long,
        entered: entered.promise,
        start: (rt) => rt.run(long, "go", {}),
      });
      const short = defineAgent({
        name: "shrinking",
        tools: { a: defineTool({ run: () => 1 }) },
        workflows: {
          async go(ctx) {
            return ctx.tool("a", {});
          },
        },
      });
      const rtB = secondRuntime(backend, short);
      await rtB.resume(runId);
      const run = await rtB.waitFor(runId, { timeoutMs: 5000 });
      expect(run.state).toBe("FAILED");
      expect(run.error?.code).toBe("REPLAY_DIVERGENCE");
      expect(run.error?.message).toContain('tool "b"');
    });

    it("refuses to resume a run that FAILED for another reason", async () => {
      const agent = defineAgent({
        name: "breaks",
        tools: {},
        workflows: {
          async go() {
            throw new Error("plain failure");
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      const run = await rt.waitFor(handle.id, { timeoutMs: 5000 });
      expect(run.state).toBe("FAILED");
      const error = await rt.resume(handle.id).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RunNotResumableError);
      expect((error as RunNotResumableError).code).toBe("RUN_NOT_RESUMABLE");
      expect((error as Error).message).toMatch(/fork/);
      expect((await rt.getRun(handle.id)).state).toBe("FAILED");
    });

    it("refuses to resume a COMPLETED run", async () => {
      const agent = defineAgent({ name: "fine", tools: {}, workflows: { go: async () => 1 } });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      expect(await handle.result()).toBe(1);
      await expect(rt.resume(handle.id)).rejects.toBeInstanceOf(RunNotResumableError);
    });
  });

  describe("replay matching", () => {
    /** v1 reads the clock then holds; later versions change step 1. */
    function clocked(first: "clock" | "tool", arg: number, block: boolean) {
      const entered = deferred();
      const calls: string[] = [];
      const agent = defineAgent({
        name: "clocked",
        tools: {
          alpha: defineTool({ run: (_ctx, { n }: { n: number }) => record(calls, "alpha", n) }),
          hold: defineTool({
            run: async () => {
              if (block) {
                entered.resolve();
                await forever;
              }
              return record(calls, "hold", "h");
            },
          }),
        },
        workflows: {
          async go(ctx) {
            const one = first === "clock" ? (await ctx.now()).getTime() : await ctx.tool("alpha", { n: arg });
            await ctx.tool("hold", {});
            return one;
          },
        },
      });
      return { agent, calls, entered: entered.promise };
    }

    it("a different step kind at the same seq is a divergence", async () => {
      const backend = under.backend();
      const v1 = clocked("clock", 0, true);
      const runId = await interruptMidRun({
        backend,
        agent: v1.agent,
        entered: v1.entered,
        start: (rt) => rt.run(v1.agent, "go", {}),
      });
      const v2 = clocked("tool", 1, false);
      const rtB = secondRuntime(backend, v2.agent);
      await rtB.resume(runId);
      const run = await rtB.waitFor(runId, { timeoutMs: 5000 });
      expect(run.error?.code).toBe("REPLAY_DIVERGENCE");
      expect(run.error?.message).toContain('value "now"');
      expect(run.error?.message).toContain('tool "alpha"');
      expect(v2.calls).toEqual([]);
    });

    it("changed arguments at the same step only warn: the recorded result is replayed", async () => {
      const backend = under.backend();
      const v1 = clocked("tool", 1, true);
      const runId = await interruptMidRun({
        backend,
        agent: v1.agent,
        entered: v1.entered,
        start: (rt) => rt.run(v1.agent, "go", {}),
      });
      const warnings: string[] = [];
      const logger = { debug() {}, info() {}, warn: (message: string) => warnings.push(message), error() {} };
      const v2 = clocked("tool", 2, false);
      const rtB = secondRuntime(backend, v2.agent, { logger });
      const output = await (await rtB.resume(runId)).result();
      expect(output).toBe(1); // the recorded result of alpha({ n: 1 }), not a new call with n: 2
      expect(v2.calls).toEqual(["hold"]);
      expect(warnings.some((w) => w.includes("step 1") && w.includes("different arguments"))).toBe(true);
    });
  });

  describe("tool attempts and retries", () => {
    it("records each failed attempt's error on the step and completes when a retry succeeds", async () => {
      let calls = 0;
      const agent = defineAgent({
        name: "flaky",
        tools: {
          wobbly: defineTool({
            retry: fast,
            run: (ctx) => {
              calls++;
              if (ctx.attempt < 3) throw new Error(`wobble ${ctx.attempt}`);
              return { attempt: ctx.attempt };
            },
          }),
        },
        workflows: {
          async go(ctx) {
            return ctx.tool("wobbly", {});
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      expect(await handle.result()).toEqual({ attempt: 3 });
      expect(calls).toBe(3);
      const [step] = (await rt.history(handle.id)).steps;
      expect(step?.status).toBe("completed");
      expect(step?.attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
      expect(step?.attempts.map((a) => a.error?.message)).toEqual(["wobble 1", "wobble 2", undefined]);
      for (const a of step?.attempts ?? []) expect(a.endedAt).not.toBeNull();
    });

    it("throws ToolFailedError into the workflow when retries run out; a workflow that catches it goes on", async () => {
      const seen: Caught[] = [];
      let calls = 0;
      const agent = defineAgent({
        name: "doomed",
        tools: {
          broken: defineTool({
            retry: { ...fast, maximumAttempts: 3 },
            run: () => {
              calls++;
              throw new Error("disk on fire");
            },
          }),
          after: defineTool({ run: () => "after" }),
        },
        workflows: {
          async go(ctx) {
            try {
              await ctx.tool("broken", {});
            } catch (error) {
              seen.push(caught(error));
            }
            return ctx.tool("after", {});
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      expect(await handle.result()).toBe("after");
      expect(calls).toBe(3);
      expect(seen).toEqual([
        {
          name: "ToolFailedError",
          code: "TOOL_FAILED",
          message: expect.stringContaining("disk on fire"),
          isToolFailed: true,
          tool: "broken",
          attempts: 3,
          causeName: "Error",
        },
      ]);
      expect(seen[0]?.message).toContain('"broken"');
      const [failed, after] = (await rt.history(handle.id)).steps;
      expect(failed).toMatchObject({ seq: 1, name: "broken", status: "failed" });
      expect(failed?.error?.code).toBe("TOOL_FAILED");
      expect(failed?.error?.cause?.message).toBe("disk on fire");
      expect(failed?.attempts).toHaveLength(3);
      expect(after).toMatchObject({ seq: 2, status: "completed", result: "after" });
    });

    it("fails the run with TOOL_FAILED when the workflow does not catch it", async () => {
      const agent = defineAgent({
        name: "uncaught",
        tools: {
          broken: defineTool({
            retry: { ...fast, maximumAttempts: 2 },
            run: () => {
              throw new Error("nope");
            },
          }),
        },
        workflows: {
          async go(ctx) {
            return ctx.tool("broken", {});
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      const error = await handle.result().catch((e: unknown) => e);
      expect((error as { code: string }).code).toBe("RUN_FAILED");
      const run = await rt.getRun(handle.id);
      expect(run.error?.code).toBe("TOOL_FAILED");
      expect(run.error?.message).toContain("after 2 attempts");
    });

    it("throws the same ToolFailedError again on replay without running the tool", async () => {
      const backend = under.backend();
      const make = (seen: Caught[], counter: { broken: number }, block: boolean) => {
        const entered = deferred();
        const agent = defineAgent({
          name: "doomed_replay",
          tools: {
            broken: defineTool({
              retry: { ...fast, maximumAttempts: 2 },
              run: () => {
                counter.broken++;
                throw new Error("still broken");
              },
            }),
            hold: defineTool({
              run: async () => {
                if (block) {
                  entered.resolve();
                  await forever;
                }
                return "held";
              },
            }),
          },
          workflows: {
            async go(ctx) {
              let message = "";
              try {
                await ctx.tool("broken", {});
              } catch (error) {
                seen.push(caught(error));
                message = (error as Error).message;
              }
              await ctx.tool("hold", {});
              return message;
            },
          },
        });
        return { agent, entered: entered.promise };
      };
      const seenA: Caught[] = [];
      const countA = { broken: 0 };
      const a = make(seenA, countA, true);
      const runId = await interruptMidRun({
        backend,
        agent: a.agent,
        entered: a.entered,
        start: (rt) => rt.run(a.agent, "go", {}),
      });
      expect(countA.broken).toBe(2);

      const seenB: Caught[] = [];
      const countB = { broken: 0 };
      const b = make(seenB, countB, false);
      const rtB = secondRuntime(backend, b.agent);
      const output = await (await rtB.resume(runId)).result();
      expect(countB.broken).toBe(0);
      expect(seenB).toHaveLength(1);
      expect(seenB[0]).toMatchObject({
        name: "ToolFailedError",
        code: "TOOL_FAILED",
        isToolFailed: true,
        tool: "broken",
        attempts: 2,
        message: seenA[0]?.message,
      });
      expect(seenB[0]?.causeName).toBe(seenA[0]?.causeName);
      expect(output).toBe(seenA[0]?.message);
    });

    it("stops at the first NonRetryableError", async () => {
      let calls = 0;
      const seen: Caught[] = [];
      const agent = defineAgent({
        name: "nonretry",
        tools: {
          closed: defineTool({
            retry: fast,
            run: () => {
              calls++;
              throw new NonRetryableError("account closed");
            },
          }),
        },
        workflows: {
          async go(ctx) {
            await ctx.tool("closed", {}).catch((e: unknown) => seen.push(caught(e)));
            return "went on";
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      expect(await handle.result()).toBe("went on");
      expect(calls).toBe(1);
      expect(seen[0]).toMatchObject({ code: "TOOL_FAILED", attempts: 1, causeName: "NonRetryableError" });
    });

    it("stops at errors listed in nonRetryableErrors, by class or by name, and per call", async () => {
      class QuotaError extends Error {}
      const calls = { byClass: 0, byName: 0, perCall: 0 };
      const agent = defineAgent({
        name: "listed",
        tools: {
          byClass: defineTool({
            retry: { ...fast, nonRetryableErrors: [QuotaError] },
            run: () => {
              calls.byClass++;
              throw new QuotaError("over quota");
            },
          }),
          byName: defineTool({
            retry: { ...fast, nonRetryableErrors: ["Forbidden"] },
            run: () => {
              calls.byName++;
              throw Object.assign(new Error("no access"), { name: "Forbidden" });
            },
          }),
          perCall: defineTool({
            retry: fast,
            run: () => {
              calls.perCall++;
              throw new QuotaError("over quota");
            },
          }),
        },
        workflows: {
          async go(ctx) {
            const codes: unknown[] = [];
            const note = (e: unknown) => codes.push((e as { code?: unknown }).code);
            await ctx.tool("byClass", {}).catch(note);
            await ctx.tool("byName", {}).catch(note);
            await ctx.tool("perCall", {}, { retry: { ...fast, nonRetryableErrors: [QuotaError] } }).catch(note);
            return codes;
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      expect(await handle.result()).toEqual(["TOOL_FAILED", "TOOL_FAILED", "TOOL_FAILED"]);
      expect(calls).toEqual({ byClass: 1, byName: 1, perCall: 1 });
    });
  });

  describe("timeouts and heartbeats", () => {
    it("aborts ctx.signal at the start-to-close timeout and counts it as an attempt", async () => {
      const reasons: unknown[] = [];
      const seen: Caught[] = [];
      const agent = defineAgent({
        name: "slowpoke",
        tools: {
          stuck: defineTool({
            retry: { ...fast, maximumAttempts: 2 },
            startToCloseTimeoutMs: 20,
            run: (ctx) =>
              new Promise((_, reject) => {
                ctx.signal.addEventListener("abort", () => {
                  reasons.push(ctx.signal.reason);
                  reject(ctx.signal.reason);
                });
              }),
          }),
        },
        workflows: {
          async go(ctx) {
            await ctx.tool("stuck", {}).catch((e: unknown) => seen.push(caught(e)));
            return "after timeout";
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      expect(await handle.result()).toBe("after timeout");
      expect(reasons).toHaveLength(2);
      for (const r of reasons) expect(r).toBeInstanceOf(StepTimeoutError);
      expect(seen[0]).toMatchObject({ code: "TOOL_FAILED", attempts: 2, causeName: "StepTimeoutError" });
      const [step] = (await rt.history(handle.id)).steps;
      expect(step?.status).toBe("failed");
      expect(step?.attempts.map((a) => a.error?.code)).toEqual(["STEP_TIMEOUT", "STEP_TIMEOUT"]);
      expect(step?.error?.cause?.code).toBe("STEP_TIMEOUT");
    });

    it("times out an attempt that ignores its signal, then retries it", async () => {
      const agent = defineAgent({
        name: "deaf",
        tools: {
          deaf: defineTool({
            retry: fast,
            run: async (ctx) => {
              if (ctx.attempt === 1) await forever;
              return `attempt ${ctx.attempt}`;
            },
          }),
        },
        workflows: {
          async go(ctx) {
            // The per-call option overrides the tool (which has no timeout).
            return ctx.tool("deaf", {}, { startToCloseTimeoutMs: 20 });
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      expect(await handle.result()).toBe("attempt 2");
      const [step] = (await rt.history(handle.id)).steps;
      expect(step?.attempts.map((a) => a.error?.code ?? "ok")).toEqual(["STEP_TIMEOUT", "ok"]);
    });

    it("fails an attempt that stops heartbeating and hands its last details to the next attempt", async () => {
      const observed: { attempt: number; lastHeartbeat: Json | undefined; reason?: unknown }[] = [];
      const agent = defineAgent({
        name: "pager",
        tools: {
          pages: defineTool({
            retry: fast,
            heartbeatTimeoutMs: 40,
            run: async (ctx) => {
              const entry: (typeof observed)[number] = { attempt: ctx.attempt, lastHeartbeat: ctx.lastHeartbeat };
              observed.push(entry);
              if (ctx.attempt === 1) {
                ctx.heartbeat({ page: 3 });
                await new Promise((_, reject) =>
                  ctx.signal.addEventListener("abort", () => {
                    entry.reason = ctx.signal.reason;
                    reject(ctx.signal.reason);
                  }),
                );
              }
              return { resumedFrom: ctx.lastHeartbeat };
            },
          }),
        },
        workflows: {
          async go(ctx) {
            return ctx.tool("pages", {});
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      expect(await handle.result()).toEqual({ resumedFrom: { page: 3 } });
      expect(observed.map((o) => [o.attempt, o.lastHeartbeat])).toEqual([
        [1, undefined],
        [2, { page: 3 }],
      ]);
      expect(observed[0]?.reason).toBeInstanceOf(HeartbeatTimeoutError);
      const [step] = (await rt.history(handle.id)).steps;
      expect(step?.attempts[0]?.error?.code).toBe("HEARTBEAT_TIMEOUT");
      expect(step?.heartbeat).toEqual({ page: 3 });
    });

    it("keeps an attempt alive for as long as it heartbeats", async () => {
      const agent = defineAgent({
        name: "chatty",
        tools: {
          steady: defineTool({
            retry: { ...fast, maximumAttempts: 1 },
            heartbeatTimeoutMs: 150,
            run: async (ctx) => {
              for (let i = 0; i < 12; i++) {
                ctx.heartbeat({ i });
                await new Promise((r) => setTimeout(r, 25));
              }
              return ctx.attempt;
            },
          }),
        },
        workflows: {
          async go(ctx) {
            return ctx.tool("steady", {});
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      // 12 x 25 ms is twice the heartbeat timeout: only the heartbeats kept it going.
      expect(await handle.result()).toBe(1);
    });
  });

  describe("inputs, names and outputs", () => {
    it("validates tool arguments with zod before running: InvalidInputError names the field", async () => {
      let ran = 0;
      const seen: { error: unknown }[] = [];
      const agent = defineAgent({
        name: "validator",
        tools: {
          fetch: defineTool({
            input: z.object({ quarter: z.string(), year: z.number().int() }),
            run: (_ctx, { quarter }) => {
              ran++;
              return quarter;
            },
          }),
        },
        workflows: {
          async go(ctx) {
            try {
              await ctx.tool("fetch", { quarter: 3 as unknown as string, year: 2026 });
            } catch (error) {
              seen.push({ error });
            }
            return ctx.tool("fetch", { quarter: "Q3", year: 2026.5 });
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      const run = await rt.waitFor(handle.id, { timeoutMs: 5000 });
      expect(ran).toBe(0);
      const first = seen[0]?.error as InvalidInputError;
      expect(first).toBeInstanceOf(InvalidInputError);
      expect(first.code).toBe("INVALID_INPUT");
      expect(first.message).toContain('tool "fetch"');
      expect(first.message).toContain("quarter");
      expect(first.issues.map((i) => i.path)).toEqual([["quarter"]]);
      expect(run.state).toBe("FAILED");
      expect(run.error?.code).toBe("INVALID_INPUT");
      expect(run.error?.message).toContain("year");
      expect((await rt.history(handle.id)).steps).toEqual([]);
    });

    it("passes the parsed (zod output) arguments to the tool", async () => {
      const agent = defineAgent({
        name: "parser",
        tools: {
          count: defineTool({
            input: z.object({ n: z.coerce.number(), tag: z.string().default("none") }),
            run: (_ctx, args) => args,
          }),
        },
        workflows: {
          async go(ctx) {
            return ctx.tool("count", { n: "41" as unknown as number });
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      expect(await (await rt.run(agent, "go", {})).result()).toEqual({ n: 41, tag: "none" });
    });

    it("rejects an unknown tool name with UnknownNameError listing the known tools", async () => {
      const agent = defineAgent({
        name: "namer",
        tools: { fetch_data: defineTool({ run: () => 1 }), summarize: defineTool({ run: () => 2 }) },
        workflows: {
          async go(ctx) {
            return ctx.tool("fetch_dta" as "fetch_data", {});
          },
        },
      });
      const seen: unknown[] = [];
      const wrapped = defineAgent({
        name: "namer_catch",
        tools: agent.tools,
        workflows: {
          async go(ctx) {
            await ctx.tool("fetch_dta" as "fetch_data", {}).catch((e: unknown) => seen.push(e));
            return "ok";
          },
        },
      });
      const rt = runtimes.make({ agents: [agent, wrapped] });
      const run = await rt.waitFor((await rt.run(agent, "go", {})).id, { timeoutMs: 5000 });
      expect(run.state).toBe("FAILED");
      expect(run.error?.code).toBe("UNKNOWN_TOOL");
      expect(run.error?.message).toContain('"fetch_dta"');
      expect(run.error?.message).toContain("fetch_data, summarize");
      await (await rt.run(wrapped, "go", {})).result();
      expect(seen[0]).toBeInstanceOf(UnknownNameError);
    });

    it.each([
      ["a function", () => () => 1],
      ["a BigInt", () => 10n],
      ["a symbol", () => Symbol("s")],
    ])("fails a workflow that returns %s with NOT_SERIALIZABLE", async (_label, value) => {
      const agent = defineAgent({
        name: "unjson",
        tools: {},
        workflows: {
          async go() {
            return value();
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const run = await rt.waitFor((await rt.run(agent, "go", {})).id, { timeoutMs: 5000 });
      expect(run.state).toBe("FAILED");
      expect(run.error?.code).toBe("NOT_SERIALIZABLE");
      expect(run.error?.message).toContain('workflow "go"');
    });

    it("fails a tool whose result is not JSON without retrying it", async () => {
      let calls = 0;
      const agent = defineAgent({
        name: "bigint_tool",
        tools: {
          big: defineTool({
            retry: fast,
            run: () => {
              calls++;
              return 1n;
            },
          }),
        },
        workflows: {
          async go(ctx) {
            return ctx.tool("big", {});
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const run = await rt.waitFor((await rt.run(agent, "go", {})).id, { timeoutMs: 5000 });
      expect(run.error?.code).toBe("TOOL_FAILED");
      expect(run.error?.cause?.code).toBe("NOT_SERIALIZABLE");
      expect(calls).toBe(1);
    });
  });

  describe("domains and models", () => {
    function reader() {
      return defineAgent({
        name: "domain_reader",
        tools: {},
        workflows: {
          async go(ctx, { domain, entity }: { domain: string; entity: string }) {
            return ctx.domain(domain, entity, { id: 7 });
          },
        },
      });
    }

    it("reads from an object provider and from a function provider, with the run id", async () => {
      const infos: string[] = [];
      const agent = reader();
      const rt = runtimes.make({
        agents: [agent],
        domains: {
          crm: {
            customer: (params, info) => {
              infos.push(info.runId);
              return { kind: "customer", ...params };
            },
          },
          inventory: (entity, params, info) => {
            infos.push(info.runId);
            return { entity, ...params };
          },
        },
      });
      const h1 = await rt.run(agent, "go", { domain: "crm", entity: "customer" });
      expect(await h1.result()).toEqual({ kind: "customer", id: 7 });
      const h2 = await rt.run(agent, "go", { domain: "inventory", entity: "widget" });
      expect(await h2.result()).toEqual({ entity: "widget", id: 7 });
      expect(infos).toEqual([h1.id, h2.id]);
      const [step] = (await rt.history(h2.id)).steps;
      expect(step).toMatchObject({ kind: "domain", name: "inventory.widget", args: { id: 7 }, status: "completed" });
    });

    it("names the registered domains for an unknown domain, and the known entities for an unknown entity", async () => {
      const agent = reader();
      const rt = runtimes.make({
        agents: [agent],
        domains: { crm: { customer: () => 1, order: () => 2 }, inventory: () => 3 },
      });
      const r1 = await rt.waitFor((await rt.run(agent, "go", { domain: "billing", entity: "invoice" })).id);
      expect(r1.state).toBe("FAILED");
      expect(r1.error?.code).toBe("UNKNOWN_DOMAIN");
      expect(r1.error?.message).toContain('"billing"');
      expect(r1.error?.message).toContain("crm, inventory");
      const r2 = await rt.waitFor((await rt.run(agent, "go", { domain: "crm", entity: "lead" })).id);
      expect(r2.error?.code).toBe("UNKNOWN_DOMAIN");
      expect(r2.error?.message).toContain("customer, order");
    });

    it("records model usage on an llm step and on a tool that calls the model", async () => {
      const model = new ScriptedModel({ replies: ["one two three", "four five"] });
      const agent = defineAgent({
        name: "talker",
        tools: {
          ask: defineTool({ run: (ctx, { q }: { q: string }) => ctx.llm.generate({ prompt: q }) }),
        },
        workflows: {
          async go(ctx) {
            const direct = await ctx.llm.chat({ prompt: "hello there" });
            const viaTool = await ctx.tool("ask", { q: "a b c d" });
            return { direct: direct.text, finish: direct.finishReason, viaTool };
          },
        },
      });
      const rt = runtimes.make({ agents: [agent], models: { default: model } });
      const handle = await rt.run(agent, "go", {});
      expect(await handle.result()).toEqual({ direct: "one two three", finish: "stop", viaTool: "four five" });
      expect(model.calls).toBe(2);
      const [llm, tool] = (await rt.history(handle.id)).steps;
      expect(llm).toMatchObject({ kind: "llm", name: "default" });
      expect(llm?.usage).toEqual({ inputTokens: 2, outputTokens: 3, modelCalls: 1, costUsd: 0 });
      expect(tool).toMatchObject({ kind: "tool", name: "ask" });
      expect(tool?.usage).toEqual({ inputTokens: 4, outputTokens: 2, modelCalls: 1, costUsd: 0 });
    });

    it("fails a model call with no model registered, naming how to register one", async () => {
      const agent = defineAgent({
        name: "mute",
        tools: {},
        workflows: {
          async go(ctx) {
            return ctx.llm.generate({ prompt: "hi" });
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const run = await rt.waitFor((await rt.run(agent, "go", {})).id);
      expect(run.error?.code).toBe("UNKNOWN_MODEL");
      expect(run.error?.message).toContain("models");
    });
  });

  describe("heartbeats across an interruption", () => {
    it("hands the details of the last heartbeat to the attempt that runs after the resume", async () => {
      const backend = under.backend();
      const entered = deferred();
      const seen: { attempt: number; last: Json | undefined }[] = [];
      let block = true;
      const agent = defineAgent({
        name: "copier",
        tools: {
          copy: defineTool({
            run: async (ctx, { files }: { files: number }) => {
              seen.push({ attempt: ctx.attempt, last: ctx.lastHeartbeat });
              const from = ((ctx.lastHeartbeat as { done?: number } | undefined)?.done ?? 0) + 1;
              for (let i = from; i <= files; i++) {
                ctx.heartbeat({ done: i });
                if (block && i === 3) {
                  // Let the heartbeat reach storage, then hang until the runtime goes away.
                  await new Promise((r) => setTimeout(r, 20));
                  entered.resolve();
                  await forever;
                }
              }
              return { copied: files, resumedAt: from };
            },
          }),
        },
        workflows: {
          async go(ctx) {
            return ctx.tool("copy", { files: 5 });
          },
        },
      });
      const runId = await interruptMidRun({
        backend,
        agent,
        entered: entered.promise,
        start: (rt) => rt.run(agent, "go", {}),
      });
      block = false;
      const b = secondRuntime(backend, agent);
      expect(await (await b.resume(runId)).result()).toEqual({ copied: 5, resumedAt: 4 });
      expect(seen).toEqual([
        { attempt: 1, last: undefined },
        { attempt: 2, last: { done: 3 } },
      ]);
      const [step] = (await b.history(runId)).steps;
      expect(step?.attempts.map((a) => a.error?.name ?? "ok")).toEqual(["AttemptInterrupted", "ok"]);
      expect(step?.heartbeat).toEqual({ done: 5 });
    });
  });

  describe("errors keep their class across replay", () => {
    /** A user's own error class: the journal holds its data, not its code, so it cannot be rebuilt. */
    class LedgerClosed extends Error {
      override readonly name = "LedgerClosed";
    }

    it("takes the same branch live and after a crash on a failed model call, domain read and tool", async () => {
      const backend = under.backend();
      const make = (block: boolean) => {
        const entered = deferred();
        const seen: string[] = [];
        const model = new ScriptedModel({
          replies: [
            () => {
              throw new ContextOverflowError("prompt is too long: 250000 tokens > 200000 maximum", {
                provider: "scripted",
                status: 400,
              });
            },
          ],
        });
        const agent = defineAgent({
          name: "branching",
          tools: {
            pay: defineTool({
              retry: { maximumAttempts: 1 },
              effect: {},
              run: () => {
                throw new EffectRefusedError("account 7 is closed");
              },
            }),
            hold: defineTool({
              run: async () => {
                if (block) {
                  entered.resolve();
                  await forever;
                }
                return "held";
              },
            }),
          },
          workflows: {
            async go(ctx) {
              try {
                await ctx.llm.generate({ prompt: "a long conversation" });
              } catch (error) {
                // The branch a workflow takes on an overflow: compact, or give up.
                seen.push(
                  error instanceof ContextOverflowError
                    ? `compact (${error.provider}, ${error.status}, ModelRequestError: ${error instanceof ModelRequestError})`
                    : `give up (${(error as Error).name})`,
                );
              }
              try {
                await ctx.domain("ledger", "balance", { account: 7 });
              } catch (error) {
                seen.push(
                  error instanceof InvalidInputError
                    ? `fix input at ${error.issues.map((i) => i.path.join(".")).join(",")}`
                    : `other (${(error as Error).name})`,
                );
              }
              try {
                await ctx.domain("ledger", "history", { account: 7 });
              } catch (error) {
                seen.push(
                  `user error: instanceof ${error instanceof LedgerClosed}, ReplayedError ${error instanceof ReplayedError}, name ${(error as Error).name}, message ${(error as Error).message}`,
                );
              }
              try {
                await ctx.tool("pay", {});
              } catch (error) {
                const cause = (error as ToolFailedError).cause;
                seen.push(
                  `tool: ${error instanceof ToolFailedError}, refused ${cause instanceof EffectRefusedError}, retryable ${(cause as EffectRefusedError).retryable}`,
                );
              }
              await ctx.tool("hold", {});
              return seen;
            },
          },
        });
        return { agent, model, entered: entered.promise, seen };
      };
      const ledger = {
        balance: () => {
          throw new InvalidInputError("no account 7", [{ path: ["account"], message: "unknown account" }]);
        },
        history: () => {
          throw new LedgerClosed("the ledger is closed for the night");
        },
      };
      const options = (model: ScriptedModel) => ({
        models: { default: model },
        domains: { ledger },
        domainRetry: { maximumAttempts: 1 },
      });
      const a = make(true);
      const runId = await interruptMidRun({
        backend,
        agent: a.agent,
        entered: a.entered,
        start: (rt) => rt.run(a.agent, "go", {}),
        extra: options(a.model),
      });
      expect(a.seen).toEqual([
        "compact (scripted, 400, ModelRequestError: true)",
        "fix input at account",
        "user error: instanceof false, ReplayedError true, name LedgerClosed, message the ledger is closed for the night",
        "tool: true, refused true, retryable false",
      ]);

      const b = make(false);
      const rtB = secondRuntime(backend, b.agent, options(b.model));
      const output = await (await rtB.resume(runId)).result();
      expect(b.model.calls).toBe(0);
      expect(b.seen).toEqual(a.seen);
      expect(output).toEqual(a.seen);
    });
  });
});
