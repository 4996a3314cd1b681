import { describe, expect, it } from "vitest";
import type { EffectStatusAnswer } from "../src/core/agent-definition.ts";
import type { RunRecord, StepRecord } from "../src/core/records.ts";
import { defineAgent, defineTool } from "../src/index.ts";
import type { Runtime } from "../src/runtime/runtime.ts";
import { forEachBackend } from "./helpers/backends.ts";
import { until } from "./helpers/runtime-helpers.ts";

/**
 * Effect records on cancel (DESIGN §4 cancellation, §5 effects): every answer of a status query
 * is on the effect; a cancel settles every effect whose outcome it left open (the status query,
 * after the tool stopped or the grace ran out) and records what it said; an outcome that stays
 * unknown holds the run in NEEDS_RECONCILIATION with the cancel pending, and the operator's
 * `reconcile` then finishes the cancel. No run ends CANCELLED with an effect whose outcome is
 * unknown, or intended and never asked about.
 */

const fast = { initialIntervalMs: 1, maximumIntervalMs: 2, jitter: 0, maximumAttempts: 3 };

type StatusMode = "applied" | "not_applied" | "unknown" | "throws" | "hangs" | "none";

interface Options {
  name: string;
  /** What the tool does when its abort signal fires: reject with the signal's reason, or nothing. */
  onAbort: "throw" | "ignore";
  /** The tool applies the effect (in the fake world) before it waits. @default true */
  applies?: boolean;
  status: StatusMode;
  idempotent?: boolean;
  compensate?: "on_failure_or_cancel";
}

/** An agent whose effect `push` waits, once started, until its run is cancelled. */
function cancelAgent(options: Options) {
  const applied = new Set<string>();
  const w = { started: 0, asked: 0, undone: [] as string[], applied };
  const statusAnswer = (key: string): EffectStatusAnswer => {
    w.asked++;
    switch (options.status) {
      case "applied":
        return applied.has(key)
          ? { outcome: "applied", result: { pushed: "per status" }, receipt: { ref: key } }
          : { outcome: "not_applied" };
      case "not_applied":
        return { outcome: "not_applied" };
      case "unknown":
        return { outcome: "unknown", note: "ledger offline" };
      case "throws":
        throw new Error("status endpoint down");
      default:
        throw new Error(`no answer for ${options.status}`);
    }
  };
  const push = defineTool({
    retry: fast,
    effect: {
      ...(options.status === "none"
        ? {}
        : {
            status: (ctx) =>
              options.status === "hangs" ? new Promise<never>(() => {}) : statusAnswer(ctx.idempotencyKey),
          }),
      ...(options.idempotent ? { idempotent: true } : {}),
      ...(options.compensate ? { compensate: "undo" } : {}),
    },
    run: (ctx, _args: { id: string }) =>
      new Promise((_resolve, reject) => {
        w.started++;
        if (options.applies !== false) applied.add(ctx.idempotencyKey);
        if (options.onAbort === "throw") ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
      }),
  });
  const agent = defineAgent({
    name: options.name,
    ...(options.compensate ? { compensate: options.compensate } : {}),
    tools: {
      push,
      undo: defineTool({
        effect: { idempotent: true },
        run: async (ctx) => {
          w.undone.push(ctx.idempotencyKey);
          return "undone";
        },
      }),
      note: defineTool({ run: async (_ctx, x: { n: number }) => x.n }),
    },
    workflows: {
      async go(ctx, input: { id: string }) {
        await ctx.tool("note", { n: 1 });
        const result = await ctx.tool("push", { id: input.id });
        await ctx.tool("note", { n: 2 });
        return result;
      },
    },
  });
  return { agent, w };
}

function pushStep(steps: readonly StepRecord[]): StepRecord & { effect: NonNullable<StepRecord["effect"]> } {
  const step = steps.find((s) => s.name === "push");
  if (!step?.effect) throw new Error("no push step with an effect");
  return step as StepRecord & { effect: NonNullable<StepRecord["effect"]> };
}

/** Starts a run of `go`, waits until `push` runs, cancels it and waits until the run settles. */
async function cancelledWhilePushing(rt: Runtime, agent: string, w: { started: number }): Promise<RunRecord> {
  const handle = await rt.run(agent, "go", { id: "x" });
  await until(() => w.started > 0, { what: "the effect tool to start" });
  await rt.cancel(handle.id, { by: "ops", reason: "customer withdrew" });
  return rt.waitFor(handle.id, { timeoutMs: 10_000 });
}

forEachBackend((under) => {
  const { runtimes } = under;

  describe("status answers on the effect", () => {
    it("keeps the not_applied answer that led to a retry (settledBy stays the attempt's), and exports it", async () => {
      const answers: string[] = [];
      let calls = 0;
      const agent = defineAgent({
        name: "answers_kept",
        tools: {
          push: defineTool({
            retry: fast,
            effect: {
              status: () => {
                answers.push("asked");
                return { outcome: "not_applied" };
              },
            },
            run: async () => {
              calls++;
              if (calls === 1) throw new Error("connection reset");
              return "pushed";
            },
          }),
        },
        workflows: {
          async go(ctx, _input: null) {
            return ctx.tool("push", {});
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", null);
      expect(await handle.result()).toBe("pushed");
      expect(answers).toEqual(["asked"]);
      const { effect } = pushStep((await rt.history(handle.id)).steps);
      expect(effect).toMatchObject({ status: "applied", settledBy: "attempt" });
      expect(effect.statusAnswers).toEqual([{ at: expect.any(Number), attempt: 1, outcome: "not_applied" }]);
      const contract = await rt.exportRun(handle.id);
      expect(contract.effects[0]?.statusAnswers).toEqual([
        { at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), attempt: 1, outcome: "not_applied", note: null },
      ]);
    });

    it("shows not_applied, settled by the status query, on a run paused before its retry", async () => {
      const agent = defineAgent({
        name: "paused_retry",
        tools: {
          push: defineTool({
            retry: { initialIntervalMs: 60_000, jitter: 0, maximumAttempts: 3 },
            effect: { status: () => ({ outcome: "not_applied" }) },
            run: async () => {
              throw new Error("connection reset");
            },
          }),
        },
        workflows: {
          async go(ctx, _input: null) {
            return ctx.tool("push", {});
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", null);
      await until(async () => (await rt.getRun(handle.id)).state === "PAUSED", { what: "the retry pause" });
      expect((await rt.getRun(handle.id)).pausedReason).toBe("awaiting_retry");
      const { effect } = pushStep((await rt.history(handle.id)).steps);
      expect(effect).toMatchObject({ status: "not_applied", settledBy: "status", settledAt: expect.any(Number) });
      expect(effect.statusAnswers).toEqual([{ at: expect.any(Number), attempt: 1, outcome: "not_applied" }]);
    });
  });

  describe("cancelling a run while an effect is in flight", () => {
    it("records a not_applied answer when the tool stopped on its signal, and ends CANCELLED after the step", async () => {
      const { agent, w } = cancelAgent({ name: "cancel_not_applied", onAbort: "throw", status: "not_applied" });
      const rt = runtimes.make({ agents: [agent] });
      const run = await cancelledWhilePushing(rt, agent.name, w);
      expect(run.state).toBe("CANCELLED");
      const { steps, transitions } = await rt.history(run.id);
      const step = pushStep(steps);
      expect(step.status).toBe("failed");
      expect(step.effect).toMatchObject({ status: "not_applied", settledBy: "status" });
      expect(step.effect.statusAnswers).toEqual([{ at: expect.any(Number), attempt: 1, outcome: "not_applied" }]);
      expect(run.error?.data).toMatchObject({
        stopped: "after_step",
        inFlight: [{ seq: 2, name: "push", outcome: "failed", effect: { id: "e2", status: "not_applied" } }],
      });
      expect(transitions.map((t) => t.to).slice(-2)).toEqual(["CANCELLING", "CANCELLED"]);
      expect(w.started).toBe(1);
    });

    it("holds the run in NEEDS_RECONCILIATION with the cancel pending while the outcome is unknown", async () => {
      const { agent, w } = cancelAgent({ name: "cancel_unknown", onAbort: "throw", status: "unknown" });
      const rt = runtimes.make({ agents: [agent] });
      const run = await cancelledWhilePushing(rt, agent.name, w);
      expect(run.state).toBe("NEEDS_RECONCILIATION");
      expect(run.stopRequest).toMatchObject({ kind: "cancel", reason: "customer withdrew" });
      expect(run.leaseOwner).toBeNull();
      expect(run.error).toMatchObject({
        code: "EFFECT_UNRESOLVED",
        data: { effectId: "e2", cancel: { by: "ops", reason: "customer withdrew", inFlight: [2] } },
      });
      expect(run.error?.message).toContain("a cancel is pending");
      expect(run.error?.message).toContain(`cairn reconcile ${run.id} e2`);
      const { steps, transitions } = await rt.history(run.id);
      expect(transitions.map((t) => t.to).slice(-3)).toEqual(["RUNNING", "CANCELLING", "NEEDS_RECONCILIATION"]);
      const { effect } = pushStep(steps);
      expect(effect.status).toBe("unknown");
      expect(effect.statusAnswers).toEqual([
        { at: expect.any(Number), attempt: 1, outcome: "unknown", note: "ledger offline" },
      ]);
      const contract = await rt.exportRun(run.id);
      expect(contract.effects.find((e) => e.id === "e2")?.statusAnswers).toEqual([
        { at: expect.any(String), attempt: 1, outcome: "unknown", note: "ledger offline" },
      ]);
      expect(contract.checkpoint.resumeRule).toMatch(/^A cancel is pending/);

      // The operator's decision finishes the cancel: the workflow does not go on.
      await rt.reconcile(run.id, "e2", { outcome: "applied", by: "alice", receipt: { ref: "checked" } });
      const ended = await rt.waitFor(run.id, { timeoutMs: 10_000 });
      expect(ended.state).toBe("CANCELLED");
      const after = await rt.history(run.id);
      expect(after.transitions.map((t) => t.to).slice(-5)).toEqual([
        "NEEDS_RECONCILIATION",
        "RECONCILING",
        "RUNNING",
        "CANCELLING",
        "CANCELLED",
      ]);
      expect(after.steps.map((s) => [s.name, s.status])).toEqual([
        ["note", "completed"],
        ["push", "completed"],
      ]);
      expect(pushStep(after.steps).effect).toMatchObject({ status: "applied", settledBy: "reconcile" });
      expect(ended.error).toMatchObject({
        code: "CANCELLED",
        data: {
          by: "ops",
          reason: "customer withdrew",
          stopped: "after_step",
          inFlight: [{ seq: 2, name: "push", outcome: "completed", effect: { id: "e2", status: "applied" } }],
        },
      });
      expect(w.started).toBe(1);
    });

    it("compensates a reconciled effect when the run compensates on cancel", async () => {
      const { agent, w } = cancelAgent({
        name: "cancel_comp",
        onAbort: "throw",
        status: "unknown",
        compensate: "on_failure_or_cancel",
      });
      const rt = runtimes.make({ agents: [agent] });
      const run = await cancelledWhilePushing(rt, agent.name, w);
      expect(run.state).toBe("NEEDS_RECONCILIATION");
      await rt.reconcile(run.id, "e2", { outcome: "applied", by: "alice" });
      const ended = await rt.waitFor(run.id, { timeoutMs: 10_000 });
      expect(ended.state).toBe("COMPENSATED");
      expect(w.undone).toHaveLength(1);
      const { transitions } = await rt.history(run.id);
      expect(transitions.map((t) => t.to).slice(-3)).toEqual(["CANCELLING", "COMPENSATING", "COMPENSATED"]);
      expect(ended.error).toMatchObject({ code: "CANCELLED", data: { stopped: "after_step" } });
    });

    it("a cancel of a run waiting for reconciliation waits for the operator, who then ends it CANCELLED", async () => {
      // The tool throws an error of unknown outcome on its own; nobody can tell whether it applied.
      let calls = 0;
      const agent = defineAgent({
        name: "cancel_waiting",
        tools: {
          push: defineTool({
            retry: fast,
            effect: {},
            run: async () => {
              calls++;
              throw new Error("connection reset after the request was sent");
            },
          }),
        },
        workflows: {
          async go(ctx, _input: null) {
            return ctx.tool("push", {});
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", null);
      expect((await rt.waitFor(handle.id)).state).toBe("NEEDS_RECONCILIATION");
      const asked = await rt.cancel(handle.id, { by: "carol", reason: "will check by hand" });
      expect(asked.state).toBe("NEEDS_RECONCILIATION");
      const waiting = await rt.getRun(handle.id);
      expect(waiting.state).toBe("NEEDS_RECONCILIATION");
      expect(waiting.stopRequest).toMatchObject({ kind: "cancel", by: { id: "carol" } });
      expect(waiting.error).toMatchObject({
        code: "EFFECT_UNRESOLVED",
        data: { effectId: "e1", cancel: { by: "carol", reason: "will check by hand" } },
      });
      expect(waiting.error?.message).toContain("A cancel is pending");

      const reconciling = await rt.reconcile(handle.id, "e1", { outcome: "not_applied", by: "carol" });
      expect(reconciling.error).toMatchObject({ code: "CANCELLED", data: { cancel: { by: "carol", inFlight: [1] } } });
      const ended = await rt.waitFor(handle.id, { timeoutMs: 10_000 });
      expect(ended.state).toBe("CANCELLED");
      expect(calls).toBe(1);
      const { steps } = await rt.history(handle.id);
      expect(pushStep(steps).effect).toMatchObject({ status: "not_applied", settledBy: "reconcile" });
      expect(ended.error?.data).toMatchObject({
        by: "carol",
        stopped: "after_step",
        inFlight: [{ seq: 1, outcome: "not_applied", effect: { id: "e1", status: "not_applied" } }],
      });
    });
  });

  describe("an effect tool that ignores its abort signal", () => {
    it("is asked about after the grace: applied is recorded, with the query's result", async () => {
      const { agent, w } = cancelAgent({ name: "stubborn_applied", onAbort: "ignore", status: "applied" });
      const rt = runtimes.make({ agents: [agent], worker: { cancelGraceMs: 100 } });
      const run = await cancelledWhilePushing(rt, agent.name, w);
      expect(run.state).toBe("CANCELLED");
      expect(w.asked).toBe(1);
      const step = pushStep((await rt.history(run.id)).steps);
      expect(step).toMatchObject({ status: "completed", result: { pushed: "per status" } });
      expect(step.attempts).toHaveLength(1);
      expect(step.attempts[0]?.error).toMatchObject({ name: "AttemptAbandoned" });
      expect(step.attempts[0]?.error?.message).toContain("cancel grace of 100 ms");
      expect(step.effect).toMatchObject({
        status: "applied",
        settledBy: "status",
        receipt: { ref: step.effect.idempotencyKey },
      });
      expect(step.effect.statusAnswers).toEqual([{ at: expect.any(Number), attempt: 1, outcome: "applied" }]);
      expect(run.error?.data).toMatchObject({
        stopped: "after_step",
        inFlight: [{ seq: 2, outcome: "completed", effect: { id: "e2", status: "applied" } }],
      });
    });

    it("is asked about after the grace: not_applied is recorded and the run ends CANCELLED", async () => {
      const { agent, w } = cancelAgent({
        name: "stubborn_not_applied",
        onAbort: "ignore",
        applies: false,
        status: "applied",
      });
      const rt = runtimes.make({ agents: [agent], worker: { cancelGraceMs: 100 } });
      const run = await cancelledWhilePushing(rt, agent.name, w);
      expect(run.state).toBe("CANCELLED");
      const step = pushStep((await rt.history(run.id)).steps);
      expect(step.effect).toMatchObject({ status: "not_applied", settledBy: "status" });
      expect(step.effect.statusAnswers?.map((a) => a.outcome)).toEqual(["not_applied"]);
      expect(run.error?.data).toMatchObject({ stopped: "after_step", inFlight: [{ seq: 2, outcome: "not_applied" }] });
    });

    it("holds the run for an operator when nothing can tell (no query, even if idempotent; a query that hangs)", async () => {
      for (const [name, extra] of [
        ["stubborn_idempotent", { status: "none", idempotent: true }],
        ["stubborn_hanging_query", { status: "hangs" }],
      ] as const) {
        const { agent, w } = cancelAgent({ name, onAbort: "ignore", ...extra });
        const rt = runtimes.make({ agents: [agent], worker: { cancelGraceMs: 100 } });
        const run = await cancelledWhilePushing(rt, agent.name, w);
        expect(run.state, name).toBe("NEEDS_RECONCILIATION");
        expect(run.error?.data, name).toMatchObject({ effectId: "e2", cancel: { by: "ops", inFlight: [2] } });
        const { effect } = pushStep((await rt.history(run.id)).steps);
        expect(effect.status, name).toBe("unknown");
        expect(effect.unknown, name).toMatch(extra.status === "none" ? /not run again/ : /no answer within 100 ms/);
      }
    });
  });

  describe("a cancelled run whose worker was lost in an effect", () => {
    it("settles the open attempt when the CANCELLING run is claimed, and records the answer", async () => {
      const { agent, w } = cancelAgent({ name: "lost_in_effect", onAbort: "ignore", status: "applied" });
      const backend = under.backend();
      const first = runtimes.make({ agents: [agent], backend });
      const handle = await first.run(agent, "go", { id: "x" });
      await until(() => w.started > 0, { what: "the effect tool to start" });
      // Its worker goes away with the effect in flight (the run is handed back INTERRUPTED).
      await first.shutdown({ graceMs: 0 });
      const left = await first.backend.getRun(handle.id);
      expect(left?.state).toBe("INTERRUPTED");
      expect(pushStep(await backend.loadSteps(handle.id)).attempts[0]?.endedAt).toBeNull();

      const client = runtimes.make({ agents: [agent], backend, worker: false });
      expect((await client.cancel(handle.id, { by: "ops", reason: "gone" })).state).toBe("CANCELLING");
      const worker = runtimes.make({ agents: [agent], backend });
      const ended = await worker.waitFor(handle.id, { timeoutMs: 10_000 });
      expect(ended.state).toBe("CANCELLED");
      const step = pushStep(await backend.loadSteps(handle.id));
      expect(step.attempts[0]?.error).toMatchObject({ name: "AttemptInterrupted" });
      expect(step.effect).toMatchObject({ status: "applied", settledBy: "status" });
      expect(step.effect.statusAnswers?.map((a) => a.outcome)).toEqual(["applied"]);
      expect(ended.error?.data).toMatchObject({
        stopped: "after_step",
        inFlight: [{ seq: 2, outcome: "completed", effect: { id: "e2", status: "applied" } }],
      });
      expect(w.started).toBe(1);
    });
  });

  describe("invariant", () => {
    it("no run ends CANCELLED with an effect whose outcome is unknown, or intended and never asked", async () => {
      const modes: StatusMode[] = ["applied", "not_applied", "unknown", "throws", "hangs", "none"];
      const cases = (["throw", "ignore"] as const).flatMap((onAbort) =>
        modes.flatMap((status) =>
          [false, true].map((idempotent) => ({
            onAbort,
            status,
            idempotent,
            name: `inv_${onAbort}_${status}_${idempotent}`,
          })),
        ),
      );
      const seen: string[] = [];
      for (const c of cases) {
        const { agent, w } = cancelAgent(c);
        const rt = runtimes.make({ agents: [agent], worker: { cancelGraceMs: 60 } });
        let run = await cancelledWhilePushing(rt, agent.name, w);
        const definite = c.status === "applied" || c.status === "not_applied";
        expect(run.state, c.name).toBe(definite ? "CANCELLED" : "NEEDS_RECONCILIATION");
        if (run.state === "NEEDS_RECONCILIATION") {
          expect(run.stopRequest?.kind, c.name).toBe("cancel");
          await rt.reconcile(run.id, "e2", { outcome: "not_applied", by: "ops" });
          run = await rt.waitFor(run.id, { timeoutMs: 10_000 });
        }
        expect(run.state, c.name).toBe("CANCELLED");
        const step = pushStep((await rt.history(run.id)).steps);
        expect(["applied", "not_applied"], c.name).toContain(step.effect.status);
        // Whoever settled it is on the record: the query's answer, or the operator's decision.
        if (step.effect.settledBy === "status") expect(step.effect.statusAnswers?.length, c.name).toBeGreaterThan(0);
        else expect(step.effect.settledBy, c.name).toBe("reconcile");
        expect(run.error?.data, c.name).toMatchObject({ stopped: "after_step" });
        seen.push(`${c.name}:${step.effect.settledBy}`);
        await rt.shutdown();
      }
      expect(seen).toHaveLength(cases.length);
    }, 60_000);
  });
});
