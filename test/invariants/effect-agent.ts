import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { defineAgent, defineTool } from "../../src/index.ts";

/**
 * An agent whose effect `pay` writes its key to a ledger file (outside the database) and, when
 * `CAIRN_KILL_IN_EFFECT` is set, SIGKILLs its process right after: the effect happened, its
 * result was never recorded. The status query reads the ledger.
 */
export function payAgent(dir: string) {
  const ledger = join(dir, "ledger.txt");
  const applied = (key: string) => existsSync(ledger) && readFileSync(ledger, "utf8").split("\n").includes(key);
  return defineAgent({
    name: "payer",
    tools: {
      pay: defineTool({
        effect: {
          status: (ctx) =>
            applied(ctx.idempotencyKey)
              ? { outcome: "applied", result: { paid: true }, receipt: { ledger: ctx.idempotencyKey } }
              : { outcome: "not_applied" },
        },
        run: async (ctx, _args: { cents: number }) => {
          appendFileSync(ledger, `${ctx.idempotencyKey}\n`);
          if (process.env.CAIRN_KILL_IN_EFFECT) process.kill(process.pid, "SIGKILL");
          return { paid: true };
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
