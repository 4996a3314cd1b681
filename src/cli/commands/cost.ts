import type { RunState } from "../../core/run-state.ts";
import { type CostFigures, costFormula, usd } from "../../runtime/cost-report.ts";
import { withClient } from "../client.ts";
import type { Command } from "../command.ts";
import { DATABASE_OPTIONS } from "../database.ts";
import { table } from "../format.ts";

/** `cairn cost`: what all runs cost, and the cost per accepted job. */
export const costCommand: Command = {
  name: "cost",
  summary: "what runs cost, by agent/workflow, and the cost per accepted job",
  usage: "cairn cost [--agent <name>] [--workflow <name>] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "--agent     only runs of this agent",
    "--workflow  only runs of this workflow",
    "Cost per accepted job = the cost of ALL runs (failed, blocked, cancelled, interrupted and rejected",
    "ones included) / the runs accepted with `cairn accept`. Costs are in US dollars from the price",
    "table of the runtime that ran them (a model with no price costs 0); tokens are input/output.",
    "A run with children is counted from its own steps, so a child's cost is not counted twice.",
  ],
  positionals: [],
  options: { agent: { type: "string" }, workflow: { type: "string" }, ...DATABASE_OPTIONS },
  async run({ values }, io) {
    const agent = values.agent as string | undefined;
    const workflow = values.workflow as string | undefined;
    return withClient(values, async ({ runtime, database }) => {
      const report = await runtime.costReport({
        ...(agent !== undefined && { agent }),
        ...(workflow !== undefined && { workflow }),
      });
      const scope = [agent && `agent ${agent}`, workflow && `workflow ${workflow}`].filter(Boolean).join(", ");
      if (report.total.runs === 0) {
        io.out(`no runs${scope ? ` of ${scope}` : ""} in ${database.label}`);
        return 0;
      }
      io.out(`cost of ${plural(report.total.runs, "run")}${scope ? ` of ${scope}` : ""} in ${database.label}`);
      const rows = report.byWorkflow.map((g) => row(`${g.agent}/${g.workflow}`, g));
      if (report.byWorkflow.length > 1) rows.push(row("all", report.total));
      const header = [
        "AGENT/WORKFLOW",
        "RUNS",
        "COST USD",
        "TOKENS IN/OUT",
        "ACCEPTED",
        "REJECTED",
        "UNREVIEWED",
        "PER ACCEPTED",
        "STATES",
      ];
      for (const line of table(header, rows)) io.out(line);
      io.out();
      io.out(costFormula(report.total));
      if (report.countedFromSteps > 0) {
        io.out(
          `(${plural(report.countedFromSteps, "run")} counted from ${report.countedFromSteps === 1 ? "its" : "their"} own steps: still open, without recorded usage, or with children)`,
        );
      }
      return 0;
    });
  },
};

function row(name: string, f: CostFigures): string[] {
  return [
    name,
    String(f.runs),
    usd(f.costUsd),
    `${f.inputTokens}/${f.outputTokens}`,
    String(f.accepted),
    String(f.rejected),
    String(f.unreviewed),
    f.costPerAcceptedJob === null ? "—" : usd(f.costPerAcceptedJob),
    states(f.byState),
  ];
}

function states(byState: CostFigures["byState"]): string {
  return (Object.entries(byState) as [RunState, number][]).map(([state, n]) => `${state} ${n}`).join(", ");
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}
