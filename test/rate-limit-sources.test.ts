import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import { mergeAgentModules } from "../src/cli/load-module.ts";
import { InvalidDefinitionError } from "../src/core/errors.ts";
import { Runtime, silentLogger } from "../src/index.ts";
import { ScriptedModel } from "../src/llm/scripted-model.ts";
import { TestRuntime } from "../src/runtime/test-runtime.ts";

/**
 * Rate limits on the step sources besides tools and models (DESIGN §4 *Rate limits*): a domain's
 * reads (`domainRateLimits`) and an MCP server's tool calls (its configuration's `rateLimit`),
 * each a limit of its own or a name of the runtime's `rateLimits` shared with other sources. On
 * the TestRuntime's virtual clock, so the waits cost no real time.
 */

describe("rate limits on domain reads", () => {
  it("spaces a domain's reads under a limit of its own, kept under domain:<name>; other domains are free", async () => {
    const reads: { domain: string; at: number }[] = [];
    const box: { t?: TestRuntime } = {};
    const reader = (domain: string) => (_entity: string, params: Record<string, unknown>) => {
      reads.push({ domain, at: (box.t as TestRuntime).clock.now() });
      return { ...params, domain };
    };
    const agent = defineAgent({
      name: "analyst",
      tools: {},
      workflows: {
        async survey(ctx, _input: null) {
          for (let i = 0; i < 4; i++) {
            await ctx.domain("crm", "account", { i });
            await ctx.domain("wiki", "page", { i });
          }
          return reads.length;
        },
      },
    });
    const t = new TestRuntime({
      agents: [agent],
      domains: { crm: reader("crm"), wiki: reader("wiki") },
      domainRateLimits: { crm: { limit: 3, per: "1m" } },
    });
    box.t = t;
    await t.start();
    try {
      const start = t.clock.now();
      const run = await t.run(agent, "survey", null);
      expect(await run.result()).toBe(8);
      const at = (domain: string) => reads.filter((r) => r.domain === domain).map((r) => r.at - start);
      expect(at("crm")).toEqual([0, 20_000, 40_000, 60_000]);
      // The free domain's reads come right after each crm read: it waits for nothing of its own.
      expect(at("wiki")).toEqual([0, 20_000, 40_000, 60_000]);
      const { steps } = await t.history(run.id);
      expect(steps.filter((s) => s.kind === "domain").length).toBe(8);
      expect(await t.backend.rateLimits?.takeRateSlot("domain:crm", 20_000, t.clock.now())).toBe(start + 80_000);
    } finally {
      await t.shutdown();
    }
  });

  it("shares a named limit between a domain and a tool: one slot per call of either", async () => {
    const calls: string[] = [];
    const box: { t?: TestRuntime } = {};
    const stamp = (what: string) => calls.push(`${what}@${(box.t as TestRuntime).clock.now() / 1000}`);
    const agent = defineAgent({
      name: "billing",
      tools: {
        charge: defineTool({
          rateLimit: "billing-api",
          run: () => {
            stamp("tool");
            return "ok";
          },
        }),
      },
      workflows: {
        async go(ctx, _input: null) {
          await ctx.domain("billing", "invoice", { id: 1 });
          await ctx.tool("charge", {});
          await ctx.domain("billing", "invoice", { id: 2 });
          return calls.length;
        },
      },
    });
    const t = new TestRuntime({
      agents: [agent],
      domains: { billing: { invoice: () => stamp("read") } },
      rateLimits: { "billing-api": { limit: 2, per: "1m" } },
      domainRateLimits: { billing: "billing-api" },
    });
    box.t = t;
    await t.start();
    try {
      const start = t.clock.now() / 1000;
      expect(await (await t.run(agent, "go", null)).result()).toBe(3);
      expect(calls).toEqual([`read@${start}`, `tool@${start + 30}`, `read@${start + 60}`]);
    } finally {
      await t.shutdown();
    }
  });
});

// The package has no "main"/"exports" to resolve, only a bin: its entry by path.
const everything = fileURLToPath(
  new URL("../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url),
);

describe("rate limits on an MCP server's tools", () => {
  // On the machine's clock: the calls are real I/O with a server process, which a virtual clock
  // would jump over while it waits.
  it("spaces the calls of every tool of the server under its configuration's rateLimit", async () => {
    const model = new ScriptedModel({
      replies: [
        {
          toolCalls: [
            { name: "everything__echo", args: { message: "one" } },
            { name: "everything__get-sum", args: { a: 1, b: 2 } },
            { name: "everything__echo", args: { message: "three" } },
          ],
        },
        "done",
      ],
    });
    const agent = defineAgent({
      name: "mcp_user",
      tools: {},
      workflows: {
        async ask(ctx, _input: null) {
          const result = await ctx.agentLoop({ prompt: "go", mcp: ["everything"] });
          return result.text;
        },
      },
    });
    const rt = new Runtime({
      agents: [agent],
      logger: silentLogger,
      models: { default: model },
      mcp: {
        everything: { command: process.execPath, args: [everything, "stdio"], rateLimit: { limit: 4, per: "1s" } },
      },
    });
    await rt.start();
    try {
      const run = await rt.run(agent, "ask", null);
      const waits: { seq: number; rateLimit: string }[] = [];
      for await (const event of rt.events(run.id)) {
        if (event.type === "step.rate_limited") waits.push({ seq: event.seq, rateLimit: event.rateLimit });
      }
      expect(await run.result()).toBe("done");
      const tools = (await rt.history(run.id)).steps.filter((s) => s.kind === "tool");
      expect(tools.map((s) => [s.name, s.status])).toEqual([
        ["everything__echo", "completed"],
        ["everything__get-sum", "completed"],
        ["everything__echo", "completed"],
      ]);
      // 4 per second: slots 250 ms apart. An attempt begins at its slot or a little after (its
      // process may be busy then), so the gaps are checked with 50 ms to spare; without the limit
      // they are a few milliseconds.
      const began = tools.map((s) => s.attempts[0]?.startedAt ?? 0).sort((x, y) => x - y);
      expect((began[1] as number) - (began[0] as number)).toBeGreaterThanOrEqual(200);
      expect((began[2] as number) - (began[1] as number)).toBeGreaterThanOrEqual(200);
      expect((began[2] as number) - (began[0] as number)).toBeGreaterThanOrEqual(450);
      expect(waits.map((w) => w.rateLimit)).toEqual(["mcp:everything", "mcp:everything"]);
    } finally {
      await rt.shutdown();
    }
  }, 30_000);
});

describe("bad rate limit declarations on domains and MCP servers", () => {
  const agent = defineAgent({
    name: "a",
    tools: {},
    workflows: {
      async go() {
        return null;
      },
    },
  });
  const refused = (make: () => unknown): string => {
    try {
      make();
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidDefinitionError);
      return (error as Error).message;
    }
    throw new Error("not refused");
  };

  it("refuses a limit for a domain the runtime does not have, and names that are not declared", () => {
    expect(
      refused(() => new TestRuntime({ agents: [agent], domainRateLimits: { crm: { limit: 1, per: "1s" } } })),
    ).toBe(
      'domainRateLimits names domain "crm", which the runtime does not have (its domains: none); register it in new Runtime({ domains: { "crm": ... } }) or remove the limit',
    );
    expect(
      refused(
        () => new TestRuntime({ agents: [agent], domains: { crm: () => 1 }, domainRateLimits: { crm: "crm-api" } }),
      ),
    ).toMatch(
      /^domain "crm" declares rateLimit "crm-api", which the runtime does not declare \(its rateLimits: none\)/,
    );
    expect(
      refused(
        () =>
          new TestRuntime({
            agents: [agent],
            domains: { crm: () => 1 },
            domainRateLimits: { crm: { limit: 0, per: "1s" } },
          }),
      ),
    ).toMatch(/^domain "crm": rate limit `limit` must be a whole number of calls above 0 \(got 0\)/);
    expect(
      refused(
        () => new TestRuntime({ agents: [agent], mcp: { gh: { url: "http://127.0.0.1:1/mcp", rateLimit: "github" } } }),
      ),
    ).toMatch(/^MCP server "gh" declares rateLimit "github", which the runtime does not declare/);
  });

  it("merges the domain limits of several agent modules, refusing one defined differently", () => {
    const module = (path: string, domainRateLimits: Record<string, { limit: number; per: string }>) => ({
      path,
      file: path,
      agents: new Map(),
      config: { domainRateLimits },
    });
    const same = mergeAgentModules([
      module("a.ts", { crm: { limit: 1, per: "1s" } }),
      module("b.ts", { crm: { limit: 1, per: "1s" } }),
    ]);
    expect(same.config.domainRateLimits).toEqual({ crm: { limit: 1, per: "1s" } });
    expect(() =>
      mergeAgentModules([
        module("a.ts", { crm: { limit: 1, per: "1s" } }),
        module("b.ts", { crm: { limit: 2, per: "1s" } }),
      ]),
    ).toThrow(/domain rate limit "crm" is defined differently by a\.ts and b\.ts \(runtimeOptions\.domainRateLimits\)/);
  });
});
