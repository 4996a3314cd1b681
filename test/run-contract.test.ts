import { afterEach, describe, expect, it } from "vitest";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import { usageOfSteps } from "../src/core/budget.ts";
import {
  AlreadyDecidedError,
  InvalidInputError,
  NonRetryableError,
  RunNotCompletedError,
  RunNotFoundError,
} from "../src/core/errors.ts";
import { ScriptedModel } from "../src/llm/scripted-model.ts";
import { InMemoryBackend, Runtimes } from "./helpers/runtime-helpers.ts";

/**
 * `runtime.exportRun`, `accept` / `reject` and `costReport` on a live runtime (memory backend):
 * what the CLI prints comes from here.
 */
const runtimes = new Runtimes();
afterEach(() => runtimes.closeAll());

const orders = defineAgent({
  name: "orders",
  tools: {
    quote: defineTool({
      retry: { maximumAttempts: 2 },
      startToCloseTimeoutMs: 1000,
      run: (ctx, { item }: { item: string }) => ctx.llm.generate({ prompt: `price of ${item} please` }),
    }),
    explode: defineTool({
      run: async (): Promise<string> => {
        throw new NonRetryableError("out of stock");
      },
    }),
  },
  workflows: {
    async place(ctx, { item }: { item: string }) {
      const price = await ctx.tool("quote", { item });
      const check = await ctx.spawn("orders", "check", { item });
      const checked = await check.result();
      return { item, price, checked };
    },
    async check(ctx, { item }: { item: string }) {
      return ctx.llm.generate({ prompt: `is ${item} in stock` });
    },
    async fail(ctx, _input: null) {
      await ctx.llm.generate({ prompt: "one two" });
      return ctx.tool("explode", {});
    },
  },
});

function runtime() {
  return runtimes.make({
    agents: [orders],
    backend: new InMemoryBackend(),
    models: { default: new ScriptedModel({ replies: ["ok"] }) },
    // $1 per input token, $2 per output token: costs large enough to add up by hand.
    prices: { scripted: { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 } },
  });
}

const job = { objective: "order one lamp", acceptanceRule: "a quote below $50", owner: "shop-ops" };

describe("runtime.exportRun", () => {
  it("exports a finished run with its children, its tools' retry rules and its declared job", async () => {
    const rt = runtime();
    const handle = await rt.run("orders", "place", { item: "lamp" }, { job });
    await handle.result();
    const contract = await rt.exportRun(handle.id);
    expect(contract.job).toEqual({ ...job, jobId: null, authority: null });
    expect(contract.run.children).toEqual([`${handle.id}.2`]);
    // Whether the parent paused for its child depends on timing; the ends of the log do not.
    expect(contract.run.transitions[0]?.contractState).toBe("admitted");
    expect(contract.run.transitions.at(-1)).toMatchObject({ to: "COMPLETED", contractState: "completed" });
    expect(contract.run.transitions.map((t) => t.id)).toEqual(contract.run.transitions.map((_, i) => i + 1));
    expect(contract.retries).toEqual([
      {
        tool: "quote",
        calls: 1,
        steps: [1],
        attempts: 1,
        policy: {
          maximumAttempts: 2,
          initialIntervalMs: 1000,
          backoffCoefficient: 2,
          maximumIntervalMs: 100_000,
          jitter: 0.2,
          nonRetryableErrors: [],
        },
        startToCloseTimeoutMs: 1000,
        heartbeatTimeoutMs: null,
        note: null,
      },
    ]);
    expect(contract.checkpoint.store.backend).toBe("memory");
    expect(contract.waits.map((w) => [w.kind, w.status])).toEqual([["child", "resolved"]]);
    expect(contract.journal.steps.map((s) => s.kind)).toEqual(["tool", "child", "wait"]);
  });

  it("throws RunNotFoundError for an unknown run", async () => {
    await expect(runtime().exportRun("run_missing")).rejects.toBeInstanceOf(RunNotFoundError);
  });
});

describe("runtime.accept / reject", () => {
  it("records one verdict on a COMPLETED run, apart from its state", async () => {
    const rt = runtime();
    const handle = await rt.run("orders", "check", { item: "lamp" });
    await handle.result();
    const before = await rt.getRun(handle.id);
    const run = await rt.accept(handle.id, { by: { kind: "user", id: "ann" }, note: "fine" });
    expect(run.acceptance).toMatchObject({ decision: "accepted", by: { kind: "user", id: "ann" }, note: "fine" });
    expect(run.state).toBe("COMPLETED");
    expect(run.lastTransitionId).toBe(before.lastTransitionId);
    await expect(rt.reject(handle.id, { by: "bob" })).rejects.toBeInstanceOf(AlreadyDecidedError);
    expect((await rt.getRun(handle.id)).acceptance?.decision).toBe("accepted");
  });

  it("refuses a run that did not complete, an unknown run and an empty identity", async () => {
    const rt = runtime();
    const handle = await rt.run("orders", "fail", null);
    await expect(handle.result()).rejects.toThrow(/out of stock/);
    await expect(rt.reject(handle.id)).rejects.toBeInstanceOf(RunNotCompletedError);
    await expect(rt.accept("run_missing")).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(rt.accept(handle.id, { by: "" })).rejects.toBeInstanceOf(InvalidInputError);
    expect((await rt.getRun(handle.id)).acceptance).toBeUndefined();
  });

  it("defaults the verdict's author to user local", async () => {
    const rt = runtime();
    const handle = await rt.run("orders", "check", { item: "desk" });
    await handle.result();
    expect((await rt.reject(handle.id)).acceptance).toMatchObject({
      decision: "rejected",
      by: { kind: "user", id: "local" },
      note: "",
    });
  });
});

describe("runtime.costReport", () => {
  it("counts every run once (a parent's usage includes its child's) and divides by the accepted runs", async () => {
    const rt = runtime();
    const placed = await rt.run("orders", "place", { item: "lamp" });
    await placed.result();
    const failed = await rt.run("orders", "fail", null);
    await failed.result().catch(() => undefined);
    await rt.accept(placed.id, { by: "ann" });

    const ids = [placed.id, `${placed.id}.2`, failed.id];
    const stepCosts = await Promise.all(
      ids.map(async (id) => usageOfSteps(await rt.backend.loadSteps(id), { children: false })),
    );
    const expected = stepCosts.reduce((sum, u) => sum + u.costUsd, 0);
    expect(expected).toBeGreaterThan(0);

    const report = await rt.costReport();
    expect(report.total.runs).toBe(3);
    expect(report.total.costUsd).toBeCloseTo(expected, 9);
    expect(report.total.inputTokens).toBe(stepCosts.reduce((sum, u) => sum + u.inputTokens, 0));
    expect(report.total.byState).toEqual({ COMPLETED: 2, FAILED: 1 });
    expect([report.total.accepted, report.total.unreviewed]).toEqual([1, 1]);
    expect(report.total.costPerAcceptedJob).toBeCloseTo(expected, 9);
    expect(report.byWorkflow.map((g) => g.workflow).sort()).toEqual(["check", "fail", "place"]);

    const onlyFail = await rt.costReport({ workflow: "fail" });
    expect(onlyFail.total.runs).toBe(1);
    expect(onlyFail.total.costUsd).toBeCloseTo(stepCosts[2]?.costUsd ?? Number.NaN, 9);
    expect(onlyFail.total.costPerAcceptedJob).toBeNull();
  });
});
