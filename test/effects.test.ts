import { describe, expect, it } from "vitest";
import type { EffectStatusAnswer } from "../src/core/agent-definition.ts";
import type { StepRecord } from "../src/core/records.ts";
import {
  defineAgent,
  defineTool,
  EffectNotAppliedError,
  EffectNotFoundError,
  EffectRefusedError,
  InvalidInputError,
} from "../src/index.ts";
import { forEachBackend, intercept } from "./helpers/backends.ts";

/**
 * Effect tools (DESIGN §5): the intent is committed synchronously before the tool runs, the
 * idempotency key is the same for every attempt and replay, the receipt is recorded, and an
 * attempt of unknown outcome is settled by the status query or an operator — never run again
 * silently.
 */

const fast = { initialIntervalMs: 1, maximumIntervalMs: 2, jitter: 0 };

/** A fake outside world: applied keys and what each call saw. */
function world() {
  const applied = new Map<string, number>();
  const calls: { key: string; attempt: number }[] = [];
  return { applied, calls };
}

function agentWith(options: {
  name: string;
  /** What each attempt does after it was seen: "apply", "apply-then-throw", "throw", "not-applied", "refuse", "hang". */
  script: string[];
  status?: (key: string) => EffectStatusAnswer;
  idempotent?: boolean;
  key?: (args: { id: string }) => string;
  receipt?: (result: unknown) => unknown;
  timeoutMs?: number;
}) {
  const w = world();
  const push = defineTool({
    retry: { ...fast, maximumAttempts: 4 },
    ...(options.timeoutMs ? { startToCloseTimeoutMs: options.timeoutMs } : {}),
    effect: {
      ...(options.key ? { key: options.key } : {}),
      ...(options.status ? { status: (ctx) => options.status?.(ctx.idempotencyKey) as EffectStatusAnswer } : {}),
      ...(options.idempotent ? { idempotent: true } : {}),
      ...(options.receipt ? { receipt: options.receipt } : {}),
    },
    run: async (ctx, args: { id: string }) => {
      const what = options.script[w.calls.length] ?? "apply";
      w.calls.push({ key: ctx.idempotencyKey, attempt: ctx.attempt });
      const apply = () => w.applied.set(ctx.idempotencyKey, (w.applied.get(ctx.idempotencyKey) ?? 0) + 1);
      switch (what) {
        case "apply":
          apply();
          return { done: args.id };
        case "apply-then-throw":
          apply();
          throw new Error("connection reset after the request was sent");
        case "throw":
          throw new Error("connection reset");
        case "not-applied":
          throw new EffectNotAppliedError("the service said it did nothing");
        case "refuse":
          throw new EffectRefusedError("insufficient funds");
        case "hang":
          apply();
          return new Promise(() => {});
      }
      throw new Error(`bad script step ${what}`);
    },
  });
  const agent = defineAgent({
    name: options.name,
    tools: { push, note: defineTool({ run: async (_ctx, x: { n: number }) => x.n }) },
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

function effectOf(steps: readonly StepRecord[]) {
  const step = steps.find((s) => s.name === "push");
  if (!step?.effect) throw new Error("no effect step");
  return { step, effect: step.effect };
}

forEachBackend((under) => {
  const { runtimes } = under;

  describe("effect tools", () => {
    it("commits the intent synchronously before the tool runs, with a key namespaced by agent and tool", async () => {
      const inner = under.backend();
      const writes: { effect: string | undefined; sync: boolean }[] = [];
      const backend = intercept(inner, {
        async saveSteps(steps, options) {
          for (const s of steps) if (s.name === "push") writes.push({ effect: s.effect?.status, sync: options.sync });
          return inner.saveSteps(steps, options);
        },
      });
      let seenAtRun: string | undefined;
      const { agent } = agentWith({ name: "intent_first", script: ["apply"] });
      const wrapped = defineAgent({
        name: "intent_first",
        tools: {
          ...agent.tools,
          push: defineTool({
            effect: {},
            run: async (ctx, _args: { id: string }) => {
              const stored = (await inner.loadSteps(ctx.runId)).find((s) => s.name === "push");
              seenAtRun = stored?.effect?.status;
              return ctx.idempotencyKey;
            },
          }),
        },
        workflows: {
          // The effect is the first step, so no earlier result rides on (and forces) its commit.
          async go(ctx, input: { id: string }) {
            return ctx.tool("push", { id: input.id });
          },
        },
      });
      const rt = runtimes.make({ agents: [wrapped], backend });
      const handle = await rt.run("intent_first", "go", { id: "t1" });
      const key = await handle.result();
      expect(seenAtRun).toBe("intended");
      expect(writes[0]).toEqual({ effect: "intended", sync: true });
      expect(key).toBe(`intent_first/push:${handle.id}:1`);
      const { effect, step } = effectOf((await rt.history(handle.id)).steps);
      expect(step.status).toBe("completed");
      expect(effect).toMatchObject({
        id: "e1",
        namespace: "intent_first/push",
        idempotencyKey: key,
        status: "applied",
        settledBy: "attempt",
        receipt: { idempotencyKey: key, attempt: 1 },
      });
    });

    it("gives every attempt the same key (its own key function's, namespaced) and records its receipt", async () => {
      const { agent, w } = agentWith({
        name: "same_key",
        script: ["not-applied", "not-applied", "apply"],
        key: (args) => `transfer-${args.id}`,
        receipt: (result) => ({ ref: (result as { done: string }).done }),
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run("same_key", "go", { id: "42" });
      expect(await handle.result()).toEqual({ done: "42" });
      expect(w.calls.map((c) => c.key)).toEqual(Array(3).fill("same_key/push:transfer-42"));
      expect(w.calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
      const { effect, step } = effectOf((await rt.history(handle.id)).steps);
      expect(step.attempts).toHaveLength(3);
      expect(effect).toMatchObject({ status: "applied", receipt: { ref: "42" } });
    });

    it("fails at once on EffectRefusedError: not applied, not retried", async () => {
      const { agent, w } = agentWith({ name: "refused", script: ["refuse"], status: () => ({ outcome: "applied" }) });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run("refused", "go", { id: "x" });
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("FAILED");
      expect(run.error?.code).toBe("TOOL_FAILED");
      expect(w.calls).toHaveLength(1);
      const { effect } = effectOf((await rt.history(handle.id)).steps);
      expect(effect.status).toBe("not_applied");
      expect(effect.settledBy).toBe("attempt");
    });

    it("settles an error of unknown outcome with the status query: applied → the receipt, and no second run", async () => {
      const { agent, w } = agentWith({
        name: "settled_applied",
        script: ["apply-then-throw"],
        status: (key) =>
          w.applied.has(key)
            ? { outcome: "applied", result: { done: "q" }, receipt: { ref: key } }
            : { outcome: "not_applied" },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run("settled_applied", "go", { id: "q" });
      expect(await handle.result()).toEqual({ done: "q" });
      expect(w.calls).toHaveLength(1);
      expect([...w.applied.values()]).toEqual([1]);
      const { effect, step } = effectOf((await rt.history(handle.id)).steps);
      expect(step.status).toBe("completed");
      expect(effect).toMatchObject({ status: "applied", settledBy: "status", receipt: { ref: w.calls[0]?.key } });
    });

    it("retries when the status query says not applied, with the same key", async () => {
      const { agent, w } = agentWith({
        name: "settled_not_applied",
        script: ["throw", "apply"],
        status: (key) => (w.applied.has(key) ? { outcome: "applied" } : { outcome: "not_applied" }),
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run("settled_not_applied", "go", { id: "r" });
      expect(await handle.result()).toEqual({ done: "r" });
      expect(w.calls).toHaveLength(2);
      expect(new Set(w.calls.map((c) => c.key)).size).toBe(1);
      expect([...w.applied.values()]).toEqual([1]);
    });

    it("settles a timed-out attempt with the status query", async () => {
      const { agent, w } = agentWith({
        name: "timed_out",
        script: ["hang"],
        timeoutMs: 30,
        status: (key) =>
          w.applied.has(key) ? { outcome: "applied", result: { done: "late" } } : { outcome: "not_applied" },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run("timed_out", "go", { id: "t" });
      expect(await handle.result()).toEqual({ done: "late" });
      expect(w.calls).toHaveLength(1);
      const { step } = effectOf((await rt.history(handle.id)).steps);
      expect(step.attempts[0]?.error?.code).toBe("STEP_TIMEOUT");
    });

    it("retries an idempotent effect without a status query", async () => {
      const { agent, w } = agentWith({ name: "idempotent", script: ["apply-then-throw", "apply"], idempotent: true });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run("idempotent", "go", { id: "i" });
      expect(await handle.result()).toEqual({ done: "i" });
      expect(w.calls).toHaveLength(2);
      expect(new Set(w.calls.map((c) => c.key)).size).toBe(1);
    });

    for (const [label, extra] of [
      ["without a status query and not idempotent", {}],
      [
        "when the status query cannot tell",
        { status: () => ({ outcome: "unknown", note: "ledger offline" }) as const },
      ],
      [
        "when the status query throws",
        {
          status: () => {
            throw new Error("status endpoint down");
          },
        },
      ],
    ] as const) {
      it(`goes NEEDS_RECONCILIATION ${label}, and stays there`, async () => {
        const { agent, w } = agentWith({ name: "unknown_outcome", script: ["apply-then-throw"], ...extra });
        const rt = runtimes.make({ agents: [agent] });
        const handle = await rt.run("unknown_outcome", "go", { id: "u" });
        const run = await rt.waitFor(handle.id);
        expect(run.state).toBe("NEEDS_RECONCILIATION");
        expect(run.error).toMatchObject({ code: "EFFECT_UNRESOLVED", data: { effectId: "e2" } });
        expect(run.error?.message).toContain(`cairn reconcile ${handle.id} e2`);
        expect(run.leaseOwner).toBeNull();
        await new Promise((r) => setTimeout(r, 100));
        expect(w.calls).toHaveLength(1);
        expect((await rt.getRun(handle.id)).state).toBe("NEEDS_RECONCILIATION");
        const { effect } = effectOf((await rt.history(handle.id)).steps);
        expect(effect.status).toBe("unknown");
        expect(effect.unknown).toBeTruthy();
      });
    }

    it("reconcile applied: the run goes on with the operator's result and never runs the tool again", async () => {
      const { agent, w } = agentWith({ name: "reconcile_applied", script: ["apply-then-throw"] });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run("reconcile_applied", "go", { id: "a" });
      await rt.waitFor(handle.id);
      const moved = await rt.reconcile(handle.id, "e2", {
        outcome: "applied",
        result: { done: "by hand" },
        receipt: { bankRef: "B-1" },
        by: "alice",
        note: "checked the ledger",
      });
      expect(moved.state).toBe("RECONCILING");
      expect(await handle.result()).toEqual({ done: "by hand" });
      expect(w.calls).toHaveLength(1);
      const history = await rt.history(handle.id);
      const { effect } = effectOf(history.steps);
      expect(effect).toMatchObject({
        status: "applied",
        settledBy: "reconcile",
        receipt: { bankRef: "B-1" },
        reconciliation: { outcome: "applied", by: { kind: "user", id: "alice" }, note: "checked the ledger" },
      });
      const path = history.transitions.map((t) => t.to);
      expect(path.slice(-4)).toEqual(["NEEDS_RECONCILIATION", "RECONCILING", "RUNNING", "COMPLETED"]);
      expect(history.transitions.find((t) => t.to === "RECONCILING")?.actor).toEqual({ kind: "user", id: "alice" });
      expect(history.run.error).toBeUndefined();
    });

    it("reconcile not_applied: the tool runs again with the same key", async () => {
      const { agent, w } = agentWith({ name: "reconcile_not_applied", script: ["throw", "apply"] });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run("reconcile_not_applied", "go", { id: "n" });
      await rt.waitFor(handle.id);
      await rt.reconcile(handle.id, "e2", { outcome: "not_applied", by: "bob" });
      expect(await handle.result()).toEqual({ done: "n" });
      expect(w.calls).toHaveLength(2);
      expect(w.calls[0]?.key).toBe(w.calls[1]?.key);
      const { effect } = effectOf((await rt.history(handle.id)).steps);
      expect(effect).toMatchObject({
        status: "applied",
        settledBy: "attempt",
        reconciliation: { outcome: "not_applied" },
      });
    });

    it("refuses a bad reconcile with a clear error and changes nothing", async () => {
      const { agent } = agentWith({ name: "bad_reconcile", script: ["throw"] });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run("bad_reconcile", "go", { id: "b" });
      await rt.waitFor(handle.id);
      await expect(rt.reconcile(handle.id, "e9", { outcome: "applied" })).rejects.toThrow(EffectNotFoundError);
      await expect(rt.reconcile(handle.id, "e9", { outcome: "applied" })).rejects.toThrow(/unknown outcome: e2/);
      await expect(rt.reconcile(handle.id, "e2", { outcome: "maybe" as "applied" })).rejects.toThrow(InvalidInputError);
      const before = await rt.history(handle.id);
      expect(before.run.state).toBe("NEEDS_RECONCILIATION");

      const { agent: fine } = agentWith({ name: "fine_effect", script: ["apply"] });
      const rt2 = runtimes.make({ agents: [fine] });
      const done = await rt2.run("fine_effect", "go", { id: "f" });
      await done.result();
      await expect(rt2.reconcile(done.id, "e2", { outcome: "applied" })).rejects.toThrow(
        /is applied, not of unknown outcome/,
      );
      await expect(rt2.reconcile(done.id, "e1", { outcome: "applied" })).rejects.toThrow(EffectNotFoundError);
      expect((await rt.history(handle.id)).transitions).toHaveLength(before.transitions.length);
    });

    it("a cancel of a run waiting for reconciliation waits for the operator's decision, then ends it CANCELLED", async () => {
      const { agent, w } = agentWith({ name: "cancel_unresolved", script: ["apply-then-throw"] });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run("cancel_unresolved", "go", { id: "c" });
      await rt.waitFor(handle.id);
      await rt.cancel(handle.id, { by: "carol", reason: "will check by hand" });
      // Ended now, the effect of unknown outcome could never be reconciled: the cancel waits.
      const waiting = await rt.waitFor(handle.id);
      expect(waiting.state).toBe("NEEDS_RECONCILIATION");
      expect(waiting.stopRequest?.kind).toBe("cancel");
      await rt.reconcile(handle.id, "e2", { outcome: "applied", by: "carol", note: "found it in the ledger" });
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("CANCELLED");
      await expect(rt.reconcile(handle.id, "e2", { outcome: "applied" })).rejects.toThrow(EffectNotFoundError);
      expect(w.calls).toHaveLength(1);
      const { effect, step } = effectOf((await rt.history(handle.id)).steps);
      expect(step.status).toBe("completed");
      expect(effect).toMatchObject({ status: "applied", settledBy: "reconcile" });
    });
  });
});
