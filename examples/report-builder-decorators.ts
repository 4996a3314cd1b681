/**
 * The quarterly report agent of `report-builder.ts` in decorator style (standard TC39
 * decorators, no `experimentalDecorators`). It has its own name, so both agents can be
 * registered in one runtime:
 *
 *   node bin/cairn.js run examples/report-builder-decorators.ts report_builder_classic build --input '{"quarter":"2026-Q3"}'
 *
 * In a project of your own, import from "cairn" instead of "../src/index.ts".
 */
import { z } from "zod";
import { agent, type ToolContext, tool, type WorkflowContext, workflow } from "../src/index.ts";
import { demoDelay, type QuarterlyFigures, runtimeOptions } from "./report-builder.ts";

@agent({ name: "report_builder_classic", description: "Builds a quarterly report (decorator style)" })
export class ReportBuilderClassic {
  @tool({ input: z.object({ quarter: z.string().regex(/^\d{4}-Q[1-4]$/, 'a quarter looks like "2026-Q3"') }) })
  async fetch_data(ctx: ToolContext, { quarter }: { quarter: string }): Promise<QuarterlyFigures> {
    await demoDelay(ctx.signal);
    return ctx.domain<QuarterlyFigures>("finance", "quarterly", { quarter });
  }

  @tool
  async summarize(ctx: ToolContext, { data }: { data: QuarterlyFigures }): Promise<string> {
    await demoDelay(ctx.signal);
    return ctx.llm.generate({ prompt: `Summarize: ${JSON.stringify(data)}` });
  }

  @workflow("build", { input: z.object({ quarter: z.string() }) })
  async build(ctx: WorkflowContext, { quarter }: { quarter: string }) {
    const data = (await ctx.tool("fetch_data", { quarter })) as QuarterlyFigures; // checkpoint
    const summary = (await ctx.tool("summarize", { data })) as string; // checkpoint
    return { quarter, summary, revenue: data.revenue, operatingMargin: data.operatingMargin };
  }
}

/** The same finance domain and scripted model as the functional example. */
export { runtimeOptions };
