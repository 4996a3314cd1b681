import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defineAgent, InMemoryBackend, Runtime, silentLogger } from "../src/index.ts";
import { createServer } from "../src/server/app.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { cairn } from "./helpers/cli.ts";
import { TOKEN_CONFIGS, TOKENS } from "./helpers/server-fixtures.ts";

const agent = defineAgent({
  name: "flow_unit",
  tools: {},
  workflows: {
    async work(_ctx, input: { customer: string }) {
      return input;
    },
    async other(_ctx, input: object) {
      return input;
    },
    async again(ctx, input: { round: number }) {
      if (input.round === 0) await ctx.continueAsNew({ round: 1 });
      return input;
    },
  },
  flow: {
    priority: 2,
    workflows: {
      work: { concurrency: { limit: 2, key: (input: { customer: string }) => `customer:${input.customer}` } },
    },
  },
});

describe("runtime.run flow control", () => {
  it("stores the agent's defaults and the run's own options on the run", async () => {
    const runtime = new Runtime({
      agents: [agent],
      backend: new InMemoryBackend(),
      logger: silentLogger,
      worker: false,
    });
    await runtime.start();
    try {
      const a = await runtime.run("flow_unit", "work", { customer: "c1" });
      expect(await runtime.getRun(a.id)).toMatchObject({
        concurrencyKey: "customer:c1",
        concurrencyLimit: 2,
        priority: 2,
      });
      const b = await runtime.run("flow_unit", "other", {}, { concurrencyKey: "k", concurrencyLimit: 1, priority: -5 });
      expect(await runtime.getRun(b.id)).toMatchObject({ concurrencyKey: "k", concurrencyLimit: 1, priority: -5 });
      await expect(runtime.run("flow_unit", "other", {}, { concurrencyKey: "k" })).rejects.toMatchObject({
        code: "INVALID_INPUT",
      });
    } finally {
      await runtime.shutdown();
    }
  });

  it("a continueAsNew successor keeps the run's key, limit and priority", async () => {
    const runtime = new Runtime({ agents: [agent], backend: new InMemoryBackend(), logger: silentLogger });
    await runtime.start();
    try {
      const first = await runtime.run("flow_unit", "again", { round: 0 }, { concurrencyKey: "k", concurrencyLimit: 1 });
      const done = await runtime.waitFor(first.id, { timeoutMs: 10_000 });
      expect(done.continuedTo).toBeTruthy();
      const next = await runtime.waitFor(done.continuedTo as string, { timeoutMs: 10_000 });
      expect(next).toMatchObject({ state: "COMPLETED", concurrencyKey: "k", concurrencyLimit: 1, priority: 2 });
    } finally {
      await runtime.shutdown();
    }
  });

  it("refuses a definition whose limit cannot work", () => {
    expect(() =>
      defineAgent({
        name: "bad_flow",
        tools: {},
        workflows: { async w() {} },
        flow: { concurrency: { limit: 0 } },
      }),
    ).toThrow(/concurrency.limit must be an integer >= 1/);
  });
});

describe("POST /api/runs flow control", () => {
  it("takes concurrencyKey, concurrencyLimit and priority, and the run record carries them", async () => {
    const runtime = new Runtime({
      agents: [agent],
      backend: new InMemoryBackend(),
      logger: silentLogger,
      worker: false,
    });
    const app = createServer(runtime, { tokens: TOKEN_CONFIGS, logger: silentLogger });
    try {
      const start = async (body: Record<string, unknown>) => {
        const response = await app.app.request("/api/runs", {
          method: "POST",
          headers: { Authorization: `Bearer ${TOKENS.operator}`, "Content-Type": "application/json" },
          body: JSON.stringify({ agent: "flow_unit", workflow: "other", input: {}, ...body }),
        });
        return { status: response.status, body: (await response.json()) as any };
      };
      const started = await start({ concurrencyKey: "tenant:t1", concurrencyLimit: 3, priority: 7 });
      expect(started.status).toBe(201);
      expect(started.body.run).toMatchObject({ concurrencyKey: "tenant:t1", concurrencyLimit: 3, priority: 7 });
      expect((await start({ priority: 5000 })).status).toBe(400);
      expect((await start({ concurrencyKey: "k" })).status).toBe(400);
    } finally {
      app.close();
      await runtime.shutdown({ graceMs: 0 });
    }
  });
});

describe("cairn runs / cairn show", () => {
  it("show a keyed run not yet claimed as waiting for a slot, with its key", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-flow-cli-"));
    const db = join(dir, "cairn.db");
    try {
      const backend = new SqliteBackend({ path: db });
      await backend.init();
      const base = {
        agent: "flow_unit",
        workflow: "other",
        key: null,
        input: {},
        versions: { workflow: "1", policy: null, runtime: "0.1.0" },
        meta: {},
        actor: { kind: "user" as const, id: "alice" },
        reason: "started",
      };
      const flow = { concurrencyKey: "customer:acme", concurrencyLimit: 1, priority: 3 };
      await backend.createRun({ ...base, id: "run-held", at: Date.now() - 2, flow });
      await backend.createRun({ ...base, id: "run-waiting", at: Date.now() - 1, flow });
      expect((await backend.claimRun({ workerId: "w1", now: Date.now(), leaseMs: 600_000 }))?.id).toBe("run-held");
      await backend.close();
      const listed = await cairn(["runs", "--db", db]);
      expect(listed.code).toBe(0);
      expect(listed.stdout).toContain('waiting for a slot of key "customer:acme" (limit 1), priority 3');
      expect(listed.stdout.match(/waiting for a slot/g)).toHaveLength(1);
      const shown = await cairn(["show", "run-waiting", "--db", db]);
      expect(shown.stdout).toMatch(
        /flow\s+concurrency key "customer:acme" \(limit 1\), priority 3, waiting for a slot/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
