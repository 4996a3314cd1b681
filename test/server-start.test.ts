import { afterEach, describe, expect, it } from "vitest";
import { InMemoryBackend } from "../src/backend/memory/memory-backend.ts";
import { silentLogger } from "../src/core/logger.ts";
import { defineAgent } from "../src/index.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { createServer } from "../src/server/app.ts";
import { TOKEN_CONFIGS, TOKENS } from "./helpers/server-fixtures.ts";

/**
 * What a start over HTTP takes (issue 21): the module a later `cairn resume` imports never comes
 * from a request; the keys of `meta` the runtime reads back are refused; per-run options only
 * tighten what the agent's author declared, unless the caller is admin.
 */

const capped = defineAgent({
  name: "capped",
  budget: { steps: 20, toolCalls: 5 },
  compensate: "on_failure",
  tools: {},
  workflows: {
    async echo(_ctx, input: unknown) {
      return input;
    },
  },
});

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function server(options: { agentModules?: Record<string, string> } = {}) {
  const runtime = new Runtime({ agents: [capped], backend: new InMemoryBackend(), logger: silentLogger });
  const app = createServer(runtime, { tokens: TOKEN_CONFIGS, logger: silentLogger, ...options });
  closers.push(async () => {
    app.close();
    await runtime.shutdown({ graceMs: 0 });
  });
  const start = async (token: keyof typeof TOKENS, body: Record<string, unknown>) => {
    const response = await app.app.request("/api/runs", {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKENS[token]}`, "Content-Type": "application/json" },
      body: JSON.stringify({ agent: "capped", workflow: "echo", input: null, ...body }),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
  return { runtime, start };
}

describe("POST /api/runs: what a start takes", () => {
  it("starts a run without an input with {}, as `cairn run` does", async () => {
    const s = server();
    const started = await s.start("operator", { input: undefined });
    expect(started.body).toMatchObject({ created: true });
    expect(started.status).toBe(201);
    expect(started.body.run.input).toEqual({});
    expect(await s.runtime.waitFor(started.body.run.id)).toMatchObject({ state: "COMPLETED", output: {} });
  });

  it.each(["module", "budget", "compensate", "job"])(
    "refuses meta.%s with 400 INVALID_INPUT naming it, and starts nothing",
    async (key) => {
      const s = server();
      const value = key === "budget" ? { steps: -1 } : key === "job" ? { objective: "x" } : "/tmp/evil.mjs";
      const refused = await s.start("admin", { meta: { ticket: "T-1", [key]: value } });
      expect(refused.status).toBe(400);
      expect(refused.body.error.code).toBe("INVALID_INPUT");
      expect(refused.body.error.message).toContain(`meta.${key}: meta.${key} is reserved`);
      expect(refused.body.error.details.issues[0].path).toEqual(["meta", key]);
      expect(await s.runtime.listRuns()).toEqual([]);
    },
  );

  it("refuses any field it does not take, naming it", async () => {
    const s = server();
    for (const field of ["module", "by", "actor", "parentRunId"]) {
      const refused = await s.start("admin", { [field]: "x" });
      expect(refused.status).toBe(400);
      expect(refused.body.error.message).toMatch(new RegExp(`Unrecognized key: "${field}"`));
    }
    expect(await s.runtime.listRuns()).toEqual([]);
  });

  it("records as meta.module only the module the server loaded the agent from", async () => {
    const s = server({ agentModules: { capped: "/srv/agents/capped.ts" } });
    const started = await s.start("operator", { meta: { ticket: "T-2" } });
    expect(started.status).toBe(201);
    expect(started.body.run.meta).toMatchObject({ ticket: "T-2", module: "/srv/agents/capped.ts" });
    const plain = server();
    const other = await plain.start("operator", {});
    expect(other.body.run.meta.module).toBeUndefined();
  });

  it("lets an operator lower a budget cap or add one, not raise one; an admin may", async () => {
    const s = server();
    const lower = await s.start("operator", { budget: { steps: 10, tokens: 1000 } });
    expect(lower.status).toBe(201);
    expect(lower.body.run.meta.budget).toEqual({ steps: 10, toolCalls: 5, tokens: 1000 });

    const raise = await s.start("operator", { budget: { steps: 21, toolCalls: 5 } });
    expect(raise.status).toBe(403);
    expect(raise.body.error.code).toBe("FORBIDDEN");
    expect(raise.body.error.message).toMatch(
      /^budget\.steps 21 is above agent "capped"'s cap of 20: .*unless the caller is admin/,
    );
    expect(raise.body.error.details.issues).toEqual([
      { path: ["budget", "steps"], message: `budget.steps 21 is above agent "capped"'s cap of 20` },
    ]);
    expect(await s.runtime.listRuns()).toHaveLength(1);

    const admin = await s.start("admin", { budget: { steps: 500 } });
    expect(admin.status).toBe(201);
    expect(admin.body.run.meta.budget).toEqual({ steps: 500, toolCalls: 5 });
  });

  it("lets only an admin name a compensation mode other than the agent's", async () => {
    const s = server();
    const same = await s.start("operator", { compensate: "on_failure" });
    expect(same.status).toBe(201);
    for (const mode of ["never", "on_failure_or_cancel"]) {
      const refused = await s.start("operator", { compensate: mode });
      expect(refused.status).toBe(403);
      expect(refused.body.error.details.issues[0].path).toEqual(["compensate"]);
    }
    expect(await s.runtime.listRuns()).toHaveLength(1);
    const admin = await s.start("admin", { compensate: "never" });
    expect(admin.status).toBe(201);
    expect(admin.body.run.meta.compensate).toBe("never");
    const unknown = await s.start("admin", { compensate: "sometimes" });
    expect(unknown.status).toBe(400);
  });

  it("keeps a __proto__ key of meta and input as data", async () => {
    const s = server();
    const response = await createServerRequest(s, '{"__proto__":{"x":1},"b":2}');
    expect(response.status).toBe(201);
    const stored = await s.runtime.getRun(response.body.run.id);
    expect(JSON.stringify(stored.meta)).toBe('{"__proto__":{"x":1},"b":2,"budget":{"toolCalls":5,"steps":20}}');
    expect(JSON.stringify(stored.input)).toBe('{"__proto__":[1]}');
  });
});

async function createServerRequest(s: ReturnType<typeof server>, meta: string) {
  return s.start("operator", JSON.parse(`{"meta":${meta},"input":{"__proto__":[1]}}`) as Record<string, unknown>);
}
