import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  agent,
  defineAgent,
  defineTool,
  InvalidDefinitionError,
  InvalidInputError,
  Runtime,
  silentLogger,
  type WorkflowContext,
  workflow,
} from "../src/index.ts";
import { forEachBackend } from "./helpers/backends.ts";

/** Tool executions, to show a refused input ran nothing. */
const ran: string[] = [];

const Quarter = z.object({ quarter: z.string().regex(/^\d{4}-Q[1-4]$/), depth: z.number().int().default(2) });

const tools = {
  fetch: defineTool({
    run: (_ctx, { quarter, depth }: { quarter: string; depth: number }) => {
      ran.push(quarter);
      return `${quarter} at depth ${depth}`;
    },
  }),
};

async function report(ctx: WorkflowContext<typeof tools>, input: z.output<typeof Quarter>) {
  return ctx.tool("fetch", input);
}

/** The agent with its workflow's input schema, and the same agent as code without one. */
const checked = defineAgent({ name: "reports", tools, workflows: { report }, inputs: { report: Quarter } });
const unchecked = defineAgent({ name: "reports", tools, workflows: { report } });

forEachBackend((under) => {
  const { runtimes } = under;
  describe("a workflow's input schema", () => {
    it("refuses a bad input when the run is started: it names the field and the fix, and starts nothing", async () => {
      const rt = runtimes.make({ agents: [checked] });
      const attempt = rt.run(checked, "report", { quarter: "Q3 2026" } as never);
      await expect(attempt).rejects.toThrow(InvalidInputError);
      await expect(attempt).rejects.toThrow(
        /^invalid input for workflow "report" of agent "reports": quarter: .*No run was started; pass an input that matches the schema in the agent's `inputs.report`$/,
      );
      const error = (await attempt.catch((e: unknown) => e)) as InvalidInputError;
      expect(error.code).toBe("INVALID_INPUT");
      expect(error.issues.map((i) => i.path)).toEqual([["quarter"]]);
      expect(await rt.listRuns()).toEqual([]);
    });

    it("gives the workflow what the schema parses the input to (defaults filled in), and stores the input as given", async () => {
      const rt = runtimes.make({ agents: [checked] });
      const run = await rt.run(checked, "report", { quarter: "2026-Q3" } as never);
      expect(await run.result()).toBe("2026-Q3 at depth 2");
      expect((await rt.getRun(run.id)).input).toEqual({ quarter: "2026-Q3" });
    });

    it("fails a run started without the check (other code) before any of its code runs", async () => {
      const backend = under.backend();
      const client = runtimes.make({ agents: [unchecked], backend, worker: false });
      const started = await client.run(unchecked, "report", { quarter: "soon", depth: 2 });
      ran.length = 0;
      const worker = runtimes.make({ agents: [checked], backend });
      await worker.start();
      const ended = await worker.waitFor(started.id, { timeoutMs: 10_000 });
      expect(ended.state).toBe("FAILED");
      expect(ended.error?.code).toBe("INVALID_INPUT");
      expect(ended.error?.message).toMatch(
        /^invalid input for workflow "report" of agent "reports": quarter: .*The workflow did not run/,
      );
      const { transitions, steps } = await worker.history(started.id);
      expect(transitions.map((t) => t.to)).toEqual(["PENDING", "RUNNING", "FAILED"]);
      expect(transitions.at(-1)?.reason).toMatch(/^INVALID_INPUT: invalid input for workflow "report"/);
      expect(steps).toEqual([]);
      expect(ran).toEqual([]);
    });
  });
});

describe("declaring input schemas", () => {
  it("refuses a schema keyed by a name that is no workflow, naming the workflows", () => {
    expect(() =>
      defineAgent({ name: "reports", tools, workflows: { report }, inputs: { reprot: Quarter } as never }),
    ).toThrow(
      new InvalidDefinitionError(
        'inputs.reprot of agent "reports" names no workflow (workflows: report); key each schema by its workflow\'s name',
      ),
    );
  });

  it("refuses something that is not a schema", () => {
    expect(() =>
      defineAgent({
        name: "reports",
        tools,
        workflows: { report },
        inputs: { report: { quarter: "string" } as never },
      }),
    ).toThrow(/inputs.report of agent "reports" must be a zod schema/);
  });

  it("takes a decorated workflow's schema from @workflow(name, { input })", async () => {
    @agent({ name: "decorated_reports" })
    class Reports {
      @workflow("report", { input: Quarter })
      async report(_ctx: WorkflowContext, input: z.output<typeof Quarter>) {
        return `${input.quarter} at depth ${input.depth}`;
      }
    }
    const rt = new Runtime({ agents: [Reports], logger: silentLogger });
    try {
      await expect(rt.run("decorated_reports", "report", { quarter: 3 })).rejects.toThrow(
        /^invalid input for workflow "report" of agent "decorated_reports": quarter: .*No run was started/,
      );
      expect(await (await rt.run("decorated_reports", "report", { quarter: "2026-Q1" })).result()).toBe(
        "2026-Q1 at depth 2",
      );
    } finally {
      await rt.shutdown();
    }
  });

  it("types the schema against the workflow's input", () => {
    // A schema whose output is not what the workflow takes does not compile.
    const wrong = { name: "reports", tools, workflows: { report }, inputs: { report: z.object({ q: z.number() }) } };
    // @ts-expect-error inputs.report parses to { q: number }, not the workflow's input
    expect(() => defineAgent(wrong)).not.toThrow();
  });
});
