import { describe, expect, it } from "vitest";
import type { StepRecord } from "../src/core/records.ts";
import { defineAgent, defineTool, InvalidInputError, NonRetryableError, RunNotResumableError } from "../src/index.ts";
import { forEachBackend } from "./helpers/backends.ts";

/**
 * Fork and rerun (DESIGN §4, "Fork and rerun"): a new run whose journal is the source's up to a
 * step, on the code of now; effects before the fork point are not applied again, later ones get
 * keys of the new run; lineage both ways.
 */

const fast = { initialIntervalMs: 1, maximumIntervalMs: 2, jitter: 0, maximumAttempts: 2 };

/** The outside world: each tool call by run, and each effect applied by idempotency key. */
function world() {
  const calls: { runId: string; tool: string }[] = [];
  const applied = new Map<string, number>();
  const called = (runId: string) => calls.filter((c) => c.runId === runId).map((c) => c.tool);
  return { calls, applied, called };
}

/** Five steps, the third an effect: fetch, compute, charge (effect), notify, summarize. */
function fiveSteps(w: ReturnType<typeof world>) {
  const plain = (tool: string) =>
    defineTool({
      run: (ctx, args: { n: number }) => {
        w.calls.push({ runId: ctx.runId, tool });
        return { tool, n: args.n + 1 };
      },
    });
  return defineAgent({
    name: "five",
    tools: {
      fetch: plain("fetch"),
      compute: plain("compute"),
      charge: defineTool({
        effect: { receipt: (result) => ({ charged: (result as { n: number }).n }) },
        run: (ctx, args: { n: number }) => {
          w.calls.push({ runId: ctx.runId, tool: "charge" });
          w.applied.set(ctx.idempotencyKey, (w.applied.get(ctx.idempotencyKey) ?? 0) + 1);
          return { tool: "charge", n: args.n + 1 };
        },
      }),
      notify: plain("notify"),
      summarize: plain("summarize"),
    },
    workflows: {
      async go(ctx, input: { n: number }) {
        let n = input.n;
        for (const tool of ["fetch", "compute", "charge", "notify", "summarize"] as const) {
          n = ((await ctx.tool(tool, { n })) as { n: number }).n;
        }
        return { n };
      },
    },
  });
}

const byName = (steps: readonly StepRecord[], name: string) => steps.find((s) => s.name === name) as StepRecord;

forEachBackend((under) => {
  const { runtimes } = under;

  describe("fork", () => {
    it("forks a five-step run from each step: no effect applied twice, receipts kept, new keys after", async () => {
      const w = world();
      const rt = runtimes.make({ agents: [fiveSteps(w)] });
      const source = await rt.run("five", "go", { n: 0 });
      expect(await source.result()).toEqual({ n: 5 });
      const sourceSteps = (await rt.history(source.id)).steps;
      const sourceCharge = byName(sourceSteps, "charge");
      expect(sourceCharge.effect?.status).toBe("applied");

      const forks: string[] = [];
      for (let fromStep = 1; fromStep <= 6; fromStep++) {
        const fork = await rt.fork(source.id, { fromStep });
        forks.push(fork.runId);
        expect(fork.fromStep).toBe(fromStep);
        const run = await rt.waitFor(fork.runId);
        expect(run.state).toBe("COMPLETED");
        expect(run.output).toEqual({ n: 5 });
        expect(run.forkedFrom).toMatchObject({ runId: source.id, fromStep, kind: "fork" });
        // The steps before the fork point were not run again; the others ran once, on the fork.
        const tools = ["fetch", "compute", "charge", "notify", "summarize"];
        expect(w.called(fork.runId)).toEqual(tools.slice(fromStep - 1));
        const steps = (await rt.history(fork.runId)).steps;
        for (const step of steps.filter((s) => s.seq < fromStep)) {
          expect(step.result).toEqual(sourceSteps[step.seq - 1]?.result);
        }
        const charge = byName(steps, "charge");
        if (fromStep > 3) {
          // Copied: the same key and receipt, nothing applied again.
          expect(charge.effect?.idempotencyKey).toBe(sourceCharge.effect?.idempotencyKey);
          expect(charge.effect?.receipt).toEqual(sourceCharge.effect?.receipt);
        } else {
          expect(charge.effect?.idempotencyKey).toBe(`five/charge:${fork.runId}:3`);
          expect(charge.effect?.idempotencyKey).not.toBe(sourceCharge.effect?.idempotencyKey);
          expect(charge.effect?.receipt).toEqual({ charged: 3 });
        }
      }
      // Every key applied exactly once: the source's, and one per fork from step 3 or before.
      expect([...w.applied.values()].every((count) => count === 1)).toBe(true);
      expect(w.applied.size).toBe(1 + 3);
      expect(w.applied.get(sourceCharge.effect?.idempotencyKey as string)).toBe(1);
      // Lineage both ways, and in the contract.
      const stored = await rt.getRun(source.id);
      expect(stored.forks?.map((f) => [f.runId, f.fromStep, f.kind])).toEqual(
        forks.map((id, i) => [id, i + 1, "fork"]),
      );
      const contract = await rt.exportRun(forks[2] as string);
      expect(contract.run.forkedFrom).toMatchObject({ runId: source.id, fromStep: 3, kind: "fork" });
      expect((await rt.exportRun(source.id)).run.forks).toHaveLength(6);
    });

    it("takes a new input, and refuses a step out of range or an unfinished prefix", async () => {
      const w = world();
      const rt = runtimes.make({ agents: [fiveSteps(w)] });
      const source = await rt.run("five", "go", { n: 0 });
      await source.result();
      const fork = await rt.fork(source.id, { fromStep: 1, input: { n: 10 } });
      expect((await rt.waitFor(fork.runId)).output).toEqual({ n: 15 });
      for (const fromStep of [0, 7, 1.5]) {
        const refused = await rt.fork(source.id, { fromStep }).catch((e: unknown) => e);
        expect(refused).toBeInstanceOf(InvalidInputError);
        expect((refused as Error).message).toMatch(/between 1 and 6/);
      }
      expect((await rt.getRun(source.id)).forks).toHaveLength(1);
    });
  });

  describe("rerun", () => {
    it("reruns a run that FAILED on a bug once the tool is fixed: earlier steps kept, the failed one on new code", async () => {
      const w = world();
      const agentWith = (parse: (text: string) => unknown) =>
        defineAgent({
          name: "parser",
          tools: {
            download: defineTool({
              run: (ctx) => {
                w.calls.push({ runId: ctx.runId, tool: "download" });
                return { text: "42" };
              },
            }),
            pay: defineTool({
              effect: {},
              run: (ctx) => {
                w.calls.push({ runId: ctx.runId, tool: "pay" });
                w.applied.set(ctx.idempotencyKey, (w.applied.get(ctx.idempotencyKey) ?? 0) + 1);
                return { paid: true };
              },
            }),
            parse: defineTool({
              retry: fast,
              run: (ctx, args: { text: string }) => {
                w.calls.push({ runId: ctx.runId, tool: "parse" });
                return parse(args.text);
              },
            }),
          },
          workflows: {
            async go(ctx) {
              const { text } = (await ctx.tool("download", {})) as { text: string };
              await ctx.tool("pay", {});
              return ctx.tool("parse", { text });
            },
          },
        });
      const backend = under.backend();
      const buggy = runtimes.make({
        backend,
        agents: [
          agentWith(() => {
            throw new NonRetryableError("parse: unexpected token");
          }),
        ],
      });
      const failed = await buggy.run("parser", "go", {});
      expect((await buggy.waitFor(failed.id)).state).toBe("FAILED");
      await runtimes.closeAll();

      // The fix is deployed: a new runtime with the tool's new code on the same store.
      const fixed = runtimes.make({ backend, agents: [agentWith((text) => ({ value: Number(text) }))] });
      const before = w.calls.length;
      const rerun = await fixed.rerun(failed.id);
      expect(rerun.fromStep).toBe(3);
      const run = await fixed.waitFor(rerun.runId);
      expect(run.state).toBe("COMPLETED");
      expect(run.output).toEqual({ value: 42 });
      expect(w.calls.slice(before).map((c) => [c.runId, c.tool])).toEqual([[rerun.runId, "parse"]]);
      // The effect before the failure was applied once, under the source's key, and kept.
      expect([...w.applied.entries()]).toEqual([[`parser/pay:${failed.id}:2`, 1]]);
      expect(run.forkedFrom).toMatchObject({ runId: failed.id, fromStep: 3, kind: "rerun" });
      const after = await fixed.getRun(failed.id);
      expect(after.state).toBe("FAILED");
      expect(after.forks?.map((f) => [f.runId, f.kind])).toEqual([[rerun.runId, "rerun"]]);
      // Only a FAILED run is rerun; the message names a command that exists.
      const refused = await fixed.rerun(rerun.runId).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(RunNotResumableError);
      expect((refused as Error).message).toContain(`cairn fork ${rerun.runId} --from-step`);
      const resumed = await fixed.resume(failed.id).catch((e: unknown) => e);
      expect((resumed as Error).message).toContain(`cairn rerun ${failed.id}`);
    });
  });
});
