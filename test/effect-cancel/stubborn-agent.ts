import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { defineAgent, defineTool } from "../../src/index.ts";

/**
 * An agent whose effect `pay` writes its key to a ledger file (outside the database) and then
 * never returns: when its abort signal fires it only notes so (file `aborted`) and goes on. The
 * status query reads the ledger.
 */
export function stubbornPayAgent(dir: string) {
  const ledger = join(dir, "ledger.txt");
  const applied = (key: string) => existsSync(ledger) && readFileSync(ledger, "utf8").split("\n").includes(key);
  return defineAgent({
    name: "stubborn_payer",
    tools: {
      pay: defineTool({
        effect: {
          status: (ctx) =>
            applied(ctx.idempotencyKey)
              ? { outcome: "applied", result: { paid: true }, receipt: { ledger: ctx.idempotencyKey } }
              : { outcome: "not_applied" },
        },
        run: (ctx, _args: { cents: number }): Promise<{ paid: boolean }> => {
          appendFileSync(ledger, `${ctx.idempotencyKey}\n`);
          ctx.signal.addEventListener("abort", () => appendFileSync(join(dir, "aborted"), "ignored\n"));
          return new Promise(() => {});
        },
      }),
    },
    workflows: {
      async bill(ctx, input: { cents: number }) {
        const paid = await ctx.tool("pay", { cents: input.cents });
        return { ...paid, cents: input.cents };
      },
    },
  });
}
