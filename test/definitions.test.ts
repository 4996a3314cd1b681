import { describe, expect, it } from "vitest";
import { z } from "zod";
import { agent, isAgentLike, toAgentDefinition, tool, workflow } from "../src/agent/decorators.ts";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import type { AgentDefinition } from "../src/core/agent-definition.ts";
import type { ToolContext, WorkflowContext } from "../src/core/context.ts";
import { InvalidDefinitionError } from "../src/core/errors.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { forEachBackend } from "./helpers/backends.ts";

const retry = { initialIntervalMs: 1, maximumAttempts: 3 };
const quarterInput = z.object({ quarter: z.string() });

/** Instances made by the decorated class, to check what `this` is. */
const instances: ReportBuilder[] = [];
const thisSeen: unknown[] = [];

@agent({ name: "report_builder", description: "Builds a quarterly report", version: "3" })
class ReportBuilder {
  readonly prefix = "Q:";
  constructor() {
    instances.push(this);
  }

  @tool({ retry, input: quarterInput })
  async fetch_data(_ctx: ToolContext, { quarter }: { quarter: string }) {
    thisSeen.push(this);
    return { quarter, revenue: quarter.length * 10 };
  }

  @tool
  async summarize(_ctx: ToolContext, { data }: { data: { quarter: string; revenue: number } }) {
    thisSeen.push(this);
    return `${this.prefix}${data.quarter}=${data.revenue}`;
  }

  @workflow("build")
  async build(ctx: WorkflowContext, { quarter }: { quarter: string }) {
    thisSeen.push(this);
    const data = (await ctx.tool("fetch_data", { quarter })) as { quarter: string; revenue: number };
    const summary = await ctx.tool("summarize", { data });
    return { quarter, summary };
  }

  /** Not decorated: not a tool. */
  helper() {
    return "not a tool";
  }
}

const functional = defineAgent({
  name: "report_builder",
  description: "Builds a quarterly report",
  version: "3",
  tools: {
    fetch_data: defineTool({
      retry,
      input: quarterInput,
      run: (_ctx, { quarter }) => ({ quarter, revenue: quarter.length * 10 }),
    }),
    summarize: defineTool({
      run: (_ctx, { data }: { data: { quarter: string; revenue: number } }) => `Q:${data.quarter}=${data.revenue}`,
    }),
  },
  workflows: {
    async build(ctx, { quarter }: { quarter: string }) {
      const data = await ctx.tool("fetch_data", { quarter });
      const summary = await ctx.tool("summarize", { data });
      return { quarter, summary };
    },
  },
});

/** The comparable parts of a definition (functions and schemas by presence). */
function shape(definition: AgentDefinition) {
  return {
    kind: definition.kind,
    name: definition.name,
    description: definition.description,
    version: definition.version,
    tools: Object.fromEntries(
      Object.entries(definition.tools).map(([name, t]) => [
        name,
        {
          kind: t.kind,
          retry: t.retry,
          input: t.input,
          description: t.description,
          startToCloseTimeoutMs: t.startToCloseTimeoutMs,
          heartbeatTimeoutMs: t.heartbeatTimeoutMs,
          run: typeof t.run,
        },
      ]),
    ),
    workflows: Object.fromEntries(Object.entries(definition.workflows).map(([name, w]) => [name, typeof w])),
  };
}

function definitionError(fn: () => unknown): InvalidDefinitionError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidDefinitionError);
    expect((error as InvalidDefinitionError).code).toBe("INVALID_DEFINITION");
    return error as InvalidDefinitionError;
  }
  throw new Error("expected an InvalidDefinitionError, nothing was thrown");
}

forEachBackend((under) => {
  const { runtimes } = under;
  describe("decorators and defineAgent", () => {
    it("produce the same definition shape", () => {
      const decorated = toAgentDefinition(ReportBuilder);
      expect(shape(decorated)).toEqual(shape(functional));
      expect(Object.keys(decorated.tools)).toEqual(["fetch_data", "summarize"]);
      expect(Object.keys(decorated.workflows)).toEqual(["build"]);
      expect(decorated.tools.fetch_data?.retry).toEqual(retry);
      expect(decorated.tools.fetch_data?.input).toBe(quarterInput);
      expect(decorated.tools.summarize?.retry).toBeUndefined();
      expect(decorated.tools).not.toHaveProperty("helper");
      expect(Object.isFrozen(decorated)).toBe(true);
      expect(Object.isFrozen(functional)).toBe(true);
    });

    it("are both agents to the runtime", () => {
      expect(isAgentLike(ReportBuilder)).toBe(true);
      expect(isAgentLike(functional)).toBe(true);
      expect(isAgentLike(class Plain {})).toBe(false);
      expect(isAgentLike({ name: "x" })).toBe(false);
      expect(toAgentDefinition(functional)).toBe(functional);
      expect(toAgentDefinition(ReportBuilder)).toBe(toAgentDefinition(ReportBuilder));
    });

    it("run the same workflow to the same output through a Runtime", async () => {
      const a = runtimes.make({ agents: [ReportBuilder] });
      const b = runtimes.make({ agents: [functional] });
      const fromClass = await (await a.run("report_builder", "build", { quarter: "2026-Q3" })).result();
      const fromFunctions = await (await b.run(functional, "build", { quarter: "2026-Q3" })).result();
      expect(fromClass).toEqual(fromFunctions);
      expect(fromClass).toEqual({ quarter: "2026-Q3", summary: "Q:2026-Q3=70" });
      // Both record the same steps.
      const stepsOf = async (rt: Runtime, id: string) =>
        (await rt.history(id)).steps.map((s) => [s.seq, s.kind, s.name, s.status, s.result]);
      const [runA] = await a.listRuns();
      const [runB] = await b.listRuns();
      expect(await stepsOf(a, runA?.id as string)).toEqual(await stepsOf(b, runB?.id as string));
    });

    it("bind `this` in decorated methods to one instance of the class", async () => {
      const rt = runtimes.make({ agents: [ReportBuilder] });
      thisSeen.length = 0;
      await (await rt.run(ReportBuilder, "build", { quarter: "Q1" })).result();
      await (await rt.run("report_builder", "build", { quarter: "Q2" })).result();
      expect(thisSeen).toHaveLength(6);
      for (const self of thisSeen) expect(self).toBeInstanceOf(ReportBuilder);
      expect(new Set(thisSeen).size).toBe(1);
      expect(instances).toContain(thisSeen[0]);
    });

    it("validate decorated tool input with the schema given to @tool", async () => {
      const rt = runtimes.make({ agents: [ReportBuilder] });
      const bad = await rt.run("report_builder", "build", { quarter: 2026 });
      const run = await rt.waitFor(bad.id);
      expect(run.state).toBe("FAILED");
      expect(run.error?.code).toBe("INVALID_INPUT");
      expect(run.error?.message).toContain("quarter");
    });

    it("name tools by the method and workflows by the argument or the method", () => {
      @agent({ name: "renamer" })
      class Renamer {
        @tool({ name: "get-thing" })
        async getThing() {
          return 1;
        }

        @workflow()
        async main(ctx: WorkflowContext) {
          return ctx.tool("get-thing", {});
        }
      }
      const definition = toAgentDefinition(Renamer);
      expect(Object.keys(definition.tools)).toEqual(["get-thing"]);
      expect(Object.keys(definition.workflows)).toEqual(["main"]);
      expect(definition.description).toBe("");
      expect(definition.version).toBe("1");
    });
  });
});

// Definitions refused before any run: no backend involved.
describe("invalid definitions", () => {
  const ok = { go: async () => 1 };

  it.each(["", "1report", "has space", "semi;colon", "x".repeat(129)])("refuses agent name %j", (name) => {
    const error = definitionError(() => defineAgent({ name, tools: {}, workflows: ok }));
    expect(error.message).toContain(JSON.stringify(name));
    expect(error.message).toMatch(/letter/);
  });

  it("accepts names with letters, digits, _, . and -", () => {
    const a = defineAgent({ name: "a1_b.c-d", tools: { "t.x-1_y": defineTool({ run: () => 1 }) }, workflows: ok });
    expect(a.name).toBe("a1_b.c-d");
  });

  it("refuses a bad tool name, naming the agent", () => {
    const error = definitionError(() =>
      defineAgent({ name: "agent_x", tools: { "bad tool": defineTool({ run: () => 1 }) }, workflows: ok }),
    );
    expect(error.message).toContain('"bad tool"');
    expect(error.message).toContain("agent_x");
  });

  it("refuses a bad workflow name", () => {
    const error = definitionError(() => defineAgent({ name: "agent_x", tools: {}, workflows: { "9lives": ok.go } }));
    expect(error.message).toContain('"9lives"');
  });

  it("refuses a tool that was not wrapped with defineTool, showing how to wrap it", () => {
    const error = definitionError(() =>
      defineAgent({
        name: "agent_x",
        tools: { fetch: (async () => 1) as never },
        workflows: ok,
      }),
    );
    expect(error.message).toContain('tool "fetch"');
    expect(error.message).toContain("defineTool");
  });

  it("refuses an agent with no workflows", () => {
    const error = definitionError(() => defineAgent({ name: "idle", tools: {}, workflows: {} }));
    expect(error.message).toContain('"idle"');
    expect(error.message).toContain("no workflows");
  });

  it("refuses a workflow that is not a function", () => {
    const error = definitionError(() =>
      defineAgent({ name: "agent_x", tools: {}, workflows: { go: "nope" as unknown as () => Promise<1> } }),
    );
    expect(error.message).toContain('"go"');
  });

  it("refuses a decorated class with no workflows", () => {
    const error = definitionError(() => {
      @agent({ name: "toolbox" })
      class Toolbox {
        @tool
        async hammer() {
          return "bang";
        }
      }
      return Toolbox;
    });
    expect(error.message).toContain('"toolbox"');
  });

  it("refuses bad tool options", () => {
    expect(definitionError(() => defineTool({ run: "x" as never })).message).toContain("run");
    expect(definitionError(() => defineTool({ input: { parse: () => 1 } as never, run: () => 1 })).message).toContain(
      "zod",
    );
    expect(definitionError(() => defineTool({ startToCloseTimeoutMs: 0, run: () => 1 })).message).toContain(
      "startToCloseTimeoutMs",
    );
    expect(definitionError(() => defineTool({ heartbeatTimeoutMs: -5, run: () => 1 })).message).toContain(
      "heartbeatTimeoutMs",
    );
    expect(() => defineTool({ retry: { maximumAttempts: 0 }, run: () => 1 })).toThrow(RangeError);
  });

  it("refuses two agents with the same name in one Runtime", () => {
    const error = definitionError(() => new Runtime({ agents: [ReportBuilder, functional] }));
    expect(error.message).toContain('"report_builder"');
    expect(error.message).toContain("unique");
  });

  it("refuses a class that is not decorated with @agent, saying how to fix it", () => {
    class NotAnAgent {
      async build() {
        return 1;
      }
    }
    const error = definitionError(() => new Runtime({ agents: [NotAnAgent] }));
    expect(error.message).toContain("NotAnAgent");
    expect(error.message).toContain("@agent");
  });

  it("refuses a Runtime without an agents list", () => {
    const error = definitionError(() => new Runtime({} as never));
    expect(error.message).toContain("agents");
  });

  it("refuses something that is neither a definition nor a class", () => {
    const error = definitionError(() => new Runtime({ agents: [{ name: "x" } as never] }));
    expect(error.message).toContain("defineAgent");
  });
});
