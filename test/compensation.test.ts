import { describe, expect, it } from "vitest";
import { defineAgent, defineTool, EffectRefusedError, InvalidDefinitionError } from "../src/index.ts";
import { forEachBackend } from "./helpers/backends.ts";

/**
 * Compensation (DESIGN §5): a run that fails (or is cancelled, under `on_failure_or_cancel`) with
 * applied effects goes COMPENSATING, the declared compensations run newest first as effect steps
 * of their own, and the run ends COMPENSATED — or FAILED naming what could not be undone. Only
 * declared operations undo anything.
 */

const fast = { initialIntervalMs: 1, maximumIntervalMs: 2, jitter: 0, maximumAttempts: 2 };

function ledgerAgent(options: {
  name: string;
  refundFails?: boolean;
  compensate?: "on_failure" | "on_failure_or_cancel";
}) {
  const ledger: string[] = [];
  let release: (() => void) | undefined;
  const agent = defineAgent({
    name: options.name,
    ...(options.compensate ? { compensate: options.compensate } : {}),
    tools: {
      reserve: defineTool({
        retry: fast,
        effect: { compensate: "release", idempotent: true },
        run: async (ctx, args: { item: string }) => {
          ledger.push(`reserve ${args.item} ${ctx.idempotencyKey.split(":")[0]}`);
          return { reservation: `R-${args.item}` };
        },
      }),
      charge: defineTool({
        retry: fast,
        effect: {
          compensate: {
            tool: "refund",
            args: (args: { cents: number }, result: { charge: string }) => ({
              charge: result.charge,
              cents: args.cents,
            }),
          },
        },
        run: async (_ctx, args: { cents: number }) => {
          ledger.push(`charge ${args.cents}`);
          return { charge: `C-${args.cents}` };
        },
      }),
      notify: defineTool({
        retry: fast,
        effect: { idempotent: true },
        run: async () => {
          ledger.push("notify");
          return "sent";
        },
      }),
      release: defineTool({
        retry: fast,
        effect: { idempotent: true },
        run: async (_ctx, args: { item: string }) => {
          ledger.push(`release ${args.item}`);
          return "released";
        },
      }),
      refund: defineTool({
        retry: fast,
        effect: { idempotent: true },
        run: async (_ctx, args: { charge: string; cents: number }) => {
          if (options.refundFails)
            throw new EffectRefusedError("the charge is already settled; refunds go through support");
          ledger.push(`refund ${args.charge} ${args.cents}`);
          return "refunded";
        },
      }),
      ship: defineTool({
        retry: fast,
        effect: { idempotent: true },
        run: async () => {
          throw new EffectRefusedError("no courier for this address");
        },
      }),
      hold: defineTool({
        run: (ctx) =>
          new Promise((_resolve, reject) => {
            release?.();
            ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
          }),
      }),
    },
    workflows: {
      async order(ctx, input: { item: string; cents: number; next: "ship" | "hold" }) {
        await ctx.tool("reserve", { item: input.item });
        await ctx.tool("charge", { cents: input.cents });
        await ctx.tool("notify", {});
        if (input.next === "hold") return ctx.tool("hold", {});
        return ctx.tool("ship", {});
      },
    },
  });
  return {
    agent,
    ledger,
    held: () =>
      new Promise<void>((resolve) => {
        release = resolve;
      }),
  };
}

forEachBackend((under) => {
  const { runtimes } = under;

  describe("compensation", () => {
    it("undoes applied effects newest first and ends COMPENSATED, keeping the run's error", async () => {
      const { agent, ledger } = ledgerAgent({ name: "shop_comp" });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(
        "shop_comp",
        "order",
        { item: "lamp", cents: 900, next: "ship" },
        { compensate: "on_failure" },
      );
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("COMPENSATED");
      expect(run.error?.code).toBe("TOOL_FAILED");
      // notify declares no compensation: nothing undoes it.
      expect(ledger).toEqual([
        `reserve lamp shop_comp/reserve`,
        "charge 900",
        "notify",
        "refund C-900 900",
        "release lamp",
      ]);
      const history = await rt.history(handle.id);
      expect(history.transitions.map((t) => t.to).slice(-3)).toEqual(["RUNNING", "COMPENSATING", "COMPENSATED"]);
      expect(history.transitions.find((t) => t.to === "COMPENSATING")?.reason).toContain(
        "undoing 2 applied effects, newest first: e2 (charge), e1 (reserve)",
      );
      const compensations = history.steps.filter((s) => s.effect?.compensates !== undefined);
      expect(compensations.map((s) => [s.name, s.effect?.compensates, s.status, s.effect?.status])).toEqual([
        ["refund", 2, "completed", "applied"],
        ["release", 1, "completed", "applied"],
      ]);
      expect(compensations.map((s) => s.seq)).toEqual([5, 6]);
      await expect(handle.result()).rejects.toMatchObject({ code: "RUN_COMPENSATED" });
    });

    it("follows the agent's mode when the run sets none, and never compensates by default", async () => {
      const byAgent = ledgerAgent({ name: "shop_agent_mode", compensate: "on_failure" });
      const plain = ledgerAgent({ name: "shop_plain" });
      const rt = runtimes.make({ agents: [byAgent.agent, plain.agent] });
      const a = await rt.run("shop_agent_mode", "order", { item: "a", cents: 1, next: "ship" });
      const b = await rt.run("shop_plain", "order", { item: "b", cents: 2, next: "ship" });
      expect((await rt.waitFor(a.id)).state).toBe("COMPENSATED");
      const failed = await rt.waitFor(b.id);
      expect(failed.state).toBe("FAILED");
      expect(plain.ledger).toEqual(["reserve b shop_plain/reserve", "charge 2", "notify"]);
      // The run's own option wins over the agent's.
      const c = await rt.run(
        "shop_agent_mode",
        "order",
        { item: "c", cents: 3, next: "ship" },
        { compensate: "never" },
      );
      expect((await rt.waitFor(c.id)).state).toBe("FAILED");
    });

    it("ends FAILED naming what could not be undone", async () => {
      const { agent, ledger } = ledgerAgent({ name: "shop_stuck", refundFails: true });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(
        "shop_stuck",
        "order",
        { item: "desk", cents: 5000, next: "ship" },
        { compensate: "on_failure" },
      );
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("FAILED");
      expect(run.error?.code).toBe("COMPENSATION_FAILED");
      expect(run.error?.message).toContain("could not undo e2 (charge) by refund");
      expect(run.error?.message).toContain("undone: e1 (reserve) by release");
      expect(run.error?.cause?.code).toBe("TOOL_FAILED");
      expect(ledger).toContain("release desk");
      expect(ledger.filter((l) => l.startsWith("refund"))).toEqual([]);
    });

    it("compensates a cancelled run under on_failure_or_cancel", async () => {
      const { agent, ledger, held } = ledgerAgent({ name: "shop_cancel" });
      const rt = runtimes.make({ agents: [agent] });
      const holding = held();
      const handle = await rt.run(
        "shop_cancel",
        "order",
        { item: "chair", cents: 70, next: "hold" },
        { compensate: "on_failure_or_cancel" },
      );
      await holding;
      await rt.cancel(handle.id, { by: "dana", reason: "customer changed their mind" });
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("COMPENSATED");
      expect(run.error?.code).toBe("CANCELLED");
      expect(ledger.slice(-2)).toEqual(["refund C-70 70", "release chair"]);
      const path = (await rt.history(handle.id)).transitions.map((t) => t.to);
      expect(path.slice(-3)).toEqual(["CANCELLING", "COMPENSATING", "COMPENSATED"]);
    });

    it("a cancelled run under on_failure is cancelled, not compensated", async () => {
      const { agent, ledger, held } = ledgerAgent({ name: "shop_cancel_only" });
      const rt = runtimes.make({ agents: [agent] });
      const holding = held();
      const handle = await rt.run(
        "shop_cancel_only",
        "order",
        { item: "rug", cents: 8, next: "hold" },
        { compensate: "on_failure" },
      );
      await holding;
      await rt.cancel(handle.id, { by: "dana" });
      expect((await rt.waitFor(handle.id)).state).toBe("CANCELLED");
      expect(ledger.some((l) => l.startsWith("refund") || l.startsWith("release"))).toBe(false);
    });
  });
});

describe("declared compensations", () => {
  it("refuses an agent whose tool names a compensation tool it does not have", () => {
    expect(() =>
      defineAgent({
        name: "bad_comp",
        tools: { pay: defineTool({ effect: { compensate: "unpay" }, run: async () => 1 }) },
        workflows: { async go() {} },
      }),
    ).toThrow(InvalidDefinitionError);
  });
});
