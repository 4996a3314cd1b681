import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { expenses } from "../examples/expense-approval.ts";
import { moneyTransfer } from "../examples/money-transfer/transfer.ts";
import { reportBuilder } from "../examples/report-builder.ts";
import { ReportBuilderClassic } from "../examples/report-builder-decorators.ts";
import { researcher } from "../examples/research-agent/research.ts";
import type { RunContract } from "../src/index.ts";
import { defineAgent } from "../src/index.ts";
import { replayHistories } from "../src/testing.ts";
import { root } from "./helpers/cli.ts";

/**
 * The golden journals (test/golden/, written by scripts/golden.mjs): runs every example recorded,
 * finished ones and one still paused, replayed through the examples' code as it is now. A change
 * to an example that would strand runs recorded before it fails here.
 */
const dir = join(root, "test/golden");
const contracts = readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as RunContract);
const EXAMPLES = [reportBuilder, ReportBuilderClassic, researcher, moneyTransfer, expenses];

describe("golden journals", () => {
  it("every example's recorded runs replay through its code now", async () => {
    const agents = new Set(contracts.map((c) => c.run.agent));
    expect([...agents].sort()).toEqual([
      "expenses",
      "money_transfer",
      "report_builder",
      "report_builder_classic",
      "researcher",
    ]);
    const report = await replayHistories({ agents: EXAMPLES, histories: contracts });
    expect(report.problems).toEqual([]);
    expect(report.results.map((r) => r.status)).toEqual(contracts.map(() => "ok"));
  });

  it("would fail on an example whose steps changed order", async () => {
    const swapped = defineAgent({
      name: reportBuilder.name,
      tools: reportBuilder.tools,
      workflows: {
        async build(ctx, { quarter }: { quarter: string }) {
          const summary = await ctx.tool("summarize", { data: await ctx.domain("finance", "quarterly", { quarter }) });
          const data = await ctx.tool("fetch_data", { quarter });
          return { quarter, data, summary };
        },
      },
    });
    const golden = contracts.filter((c) => c.run.agent === "report_builder");
    const report = await replayHistories({ agents: [swapped], histories: golden });
    expect(report.problems.map((p) => [p.status, p.seq, p.history, p.called])).toEqual(
      golden.map(() => ["diverged", 1, 'tool "fetch_data"', 'domain "finance.quarterly"']),
    );
  });

  it("replays to the end of each history: a change at the last step is caught, past an open run's end it is not", async () => {
    // The reimbursement goes through another tool (with the same approval, step 3): step 4 of the
    // finished run, past the end of the run paused on that approval.
    const changed = defineAgent({
      name: expenses.name,
      tools: { ...expenses.tools, pay: expenses.tools.reimburse },
      workflows: {
        async submit(ctx, claim: { employee: string; amount: number; purpose: string }) {
          const policy = await ctx.tool("check_policy", { amount: claim.amount, purpose: claim.purpose });
          const answer = await ctx.askUser(`Which cost center pays for "${claim.purpose}" (${claim.amount} EUR)?`);
          const { costCenter } = answer as unknown as { costCenter: string };
          const payment = await ctx.tool("pay", { employee: claim.employee, amount: claim.amount, costCenter });
          return { status: "reimbursed", category: policy.category, payment };
        },
      },
    });
    const golden = contracts.filter((c) => c.run.agent === "expenses");
    const report = await replayHistories({ agents: [changed], histories: golden });
    expect(report.results.map((r) => [r.status, r.seq ?? null, r.history ?? null])).toEqual(
      golden.map((c) => (c.run.state === "COMPLETED" ? ["diverged", 4, 'tool "reimburse"'] : ["ok", null, null])),
    );
  });
});
