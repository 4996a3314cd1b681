/**
 * The quarterly report agent of DESIGN §2, functional style, ready for the CLI:
 *
 *   node bin/cairn.js run examples/report-builder.ts report_builder build --input '{"quarter":"2026-Q3"}'
 *
 * Everything it calls is local and deterministic: the `finance` domain returns made-up figures
 * derived from the quarter, and the default model is a `ScriptedModel` that writes its summary
 * from the figures in the prompt. `CAIRN_DEMO_STEP_DELAY_MS=1500` makes each tool take that long,
 * so a run can be killed halfway and resumed (see docs/guides/crash-and-resume.md).
 *
 * In a project of your own, import from "cairn" instead of "../src/index.ts".
 */
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import {
  type DomainProvider,
  defineAgent,
  defineConfig,
  defineTool,
  type GenerateRequest,
  ScriptedModel,
} from "../src/index.ts";

/** The figures the `finance` domain returns for a quarter (amounts in millions of EUR). */
export interface QuarterlyFigures {
  quarter: string;
  currency: "EUR";
  revenue: number;
  costs: number;
  operatingMargin: number;
  previousQuarter: { quarter: string; revenue: number };
  regions: { emea: number; americas: number; apac: number };
}

const QUARTER = /^(\d{4})-Q([1-4])$/;

export const reportBuilder = defineAgent({
  name: "report_builder",
  description: "Builds a quarterly report",
  tools: {
    fetch_data: defineTool({
      description: "Reads the quarter's figures from the finance domain",
      input: z.object({ quarter: z.string().regex(QUARTER, 'a quarter looks like "2026-Q3"') }),
      run: async (ctx, { quarter }) => {
        await demoDelay(ctx.signal);
        return ctx.domain<QuarterlyFigures>("finance", "quarterly", { quarter });
      },
    }),
    summarize: defineTool({
      description: "Asks the model for a short summary of the figures",
      run: async (ctx, { data }: { data: QuarterlyFigures }) => {
        await demoDelay(ctx.signal);
        return ctx.llm.generate({ prompt: `Summarize: ${JSON.stringify(data)}` });
      },
    }),
  },
  workflows: {
    async build(ctx, { quarter }: { quarter: string }) {
      const data = await ctx.tool("fetch_data", { quarter }); // checkpoint
      const summary = await ctx.tool("summarize", { data }); // checkpoint
      return { quarter, summary, revenue: data.revenue, operatingMargin: data.operatingMargin };
    },
  },
  // Checked when a run starts: `cairn run … build` without --input starts nothing and says why.
  inputs: { build: z.object({ quarter: z.string() }) },
});

/** Deterministic made-up figures: the same quarter always gives the same numbers. */
export function quarterlyFigures(quarter: string): QuarterlyFigures {
  const match = QUARTER.exec(quarter);
  const year = Number(match?.[1] ?? 2026);
  const q = Number(match?.[2] ?? 1);
  const revenueOf = (y: number, n: number) => round(40 + (y - 2020) * 6 + n * 2.5 + ((y * 7 + n * 13) % 5) * 0.4);
  const revenue = revenueOf(year, q);
  const costs = round(revenue * (0.78 - ((year + q) % 4) * 0.02));
  const previous = q === 1 ? { y: year - 1, n: 4 } : { y: year, n: q - 1 };
  return {
    quarter,
    currency: "EUR",
    revenue,
    costs,
    operatingMargin: round(((revenue - costs) / revenue) * 100),
    previousQuarter: { quarter: `${previous.y}-Q${previous.n}`, revenue: revenueOf(previous.y, previous.n) },
    regions: { emea: round(revenue * 0.46), americas: round(revenue * 0.34), apac: round(revenue * 0.2) },
  };
}

/** The `finance` domain: `ctx.domain("finance", "quarterly", { quarter })`. */
export const finance: DomainProvider = {
  quarterly: async ({ quarter }) => quarterlyFigures(String(quarter)),
};

/** Writes the summary from the figures in a `Summarize: {...}` prompt, like a (very) small model. */
export function summarizeFigures(request: GenerateRequest): string {
  const text = request.prompt ?? "";
  let data: QuarterlyFigures;
  try {
    data = JSON.parse(text.slice(text.indexOf("{"))) as QuarterlyFigures;
  } catch {
    return "There are no figures to summarize.";
  }
  const growth = round(((data.revenue - data.previousQuarter.revenue) / data.previousQuarter.revenue) * 100);
  const [region = "emea", amount = 0] = Object.entries(data.regions).sort((a, b) => b[1] - a[1])[0] ?? [];
  return (
    `${data.quarter}: revenue ${data.currency} ${data.revenue}M (${growth >= 0 ? "+" : ""}${growth}% on ` +
    `${data.previousQuarter.quarter}), operating margin ${data.operatingMargin}%. ` +
    `${region.toUpperCase()} led with ${data.currency} ${amount}M.`
  );
}

/** What the CLI runs the agents with (`cairn run`, `cairn resume`). */
export const runtimeOptions = defineConfig({
  domains: { finance },
  models: { default: new ScriptedModel({ replies: [summarizeFigures] }) },
});

/** Waits `CAIRN_DEMO_STEP_DELAY_MS` (default 0) so the crash demo has time to kill the process. */
export async function demoDelay(signal: AbortSignal): Promise<void> {
  const ms = Number(process.env.CAIRN_DEMO_STEP_DELAY_MS ?? 0);
  if (ms > 0) await sleep(ms, undefined, { signal });
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
