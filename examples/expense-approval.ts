/**
 * A human-in-the-loop agent: it files an expense claim, asks the employee a question when the
 * claim needs a cost center, and reimburses only after someone from finance approves the exact
 * payment. While it waits the run is PAUSED and holds no compute; it survives restarts.
 *
 *   node bin/cairn.js run examples/expense-approval.ts expenses submit \
 *     --input '{"employee":"ana","amount":420,"purpose":"client dinner"}'
 *
 * then answer the question and approve the payment with the commands the CLI prints (see
 * docs/guides/waits-and-approvals.md). Everything is local: no network, no API key.
 *
 * In a project of your own, import from "cairn" instead of "../src/index.ts".
 */
import { z } from "zod";
import { defineAgent, defineConfig, defineTool } from "../src/index.ts";

/** Claims above this need a cost center. */
const COST_CENTER_LIMIT = 250;

export const expenses = defineAgent({
  name: "expenses",
  description: "Files expense claims and reimburses them once finance approves",
  tools: {
    check_policy: defineTool({
      description: "Checks a claim against the expense policy",
      input: z.object({ amount: z.number().positive(), purpose: z.string().min(3) }),
      run: (_ctx, { amount, purpose }) => ({
        allowed: amount <= 5000,
        needsCostCenter: amount > COST_CENTER_LIMIT,
        category: /dinner|lunch|meal/i.test(purpose) ? "meals" : "other",
      }),
    }),
    reimburse: defineTool({
      description: "Pays the employee back",
      // Every call waits for one of the approvers to approve these exact arguments.
      approval: { action: "reimburse", approvers: ["finance-lead"], expiresInMs: 48 * 3600_000 },
      run: (ctx, payment: { employee: string; amount: number; costCenter: string | null }) => ({
        paymentId: `pay_${ctx.idempotencyKey.replace(/[^a-z0-9]/gi, "").slice(-12)}`,
        ...payment,
      }),
    }),
  },
  workflows: {
    async submit(ctx, claim: { employee: string; amount: number; purpose: string }) {
      const policy = await ctx.tool("check_policy", { amount: claim.amount, purpose: claim.purpose });
      if (!policy.allowed) return { status: "rejected", reason: "over the policy limit" };
      let costCenter: string | null = null;
      if (policy.needsCostCenter) {
        const answer = await ctx.askUser(`Which cost center pays for "${claim.purpose}" (${claim.amount} EUR)?`, {
          schema: z.object({
            costCenter: z
              .string()
              .regex(/^CC-\d{4}$/)
              .describe('a cost center looks like "CC-1234"'),
          }),
        });
        costCenter = answer.costCenter;
      }
      const payment = await ctx.tool("reimburse", { employee: claim.employee, amount: claim.amount, costCenter });
      return { status: "reimbursed", category: policy.category, payment };
    },
  },
});

export const runtimeOptions = defineConfig({});
