import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDatabase, type TestDatabase } from "../../../test/helpers/postgres.ts";
import { until } from "../../../test/helpers/runtime-helpers.ts";
import { defineAgent, defineTool } from "../../agent/define.ts";
import { silentLogger } from "../../core/logger.ts";
import { Runtime } from "../../runtime/runtime.ts";
import { runInput } from "../conformance/conformance-fixtures.ts";
import { PostgresBackend } from "./postgres-backend.ts";

/** Wake-ups over LISTEN/NOTIFY (`postgres-listener.ts`). */

// One database per test file (embedded PostgreSQL, or CAIRN_TEST_DATABASE_URL's server), and one
// schema per backend under test, so nothing here sees another test's rows.
let db: TestDatabase;

beforeAll(async () => {
  db = await startTestDatabase();
});

afterAll(async () => {
  await db?.close();
});

describe("wake-ups over LISTEN/NOTIFY", () => {
  it("re-listens after its connection is killed, says so, and hears later wake-ups", async () => {
    const schema = db.schema();
    const backend = new PostgresBackend({ connectionString: db.url, schema });
    await backend.init();
    const heard: string[] = [];
    const unsubscribe = await backend.subscribe((wake) =>
      heard.push("runId" in wake ? `${wake.kind}:${wake.runId}` : wake.kind),
    );
    try {
      await backend.createRun(runInput({ id: "before_cut" }));
      await until(() => heard.includes("runnable:before_cut"), { what: "first wake-up" });
      const killed = await db.query(
        "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = 'cairn-listener' AND datname = current_database()",
      );
      expect(killed.rows.length).toBeGreaterThanOrEqual(1);
      await until(() => heard.includes("reconnected"), { what: "reconnected", timeoutMs: 10_000 });
      await backend.createRun(runInput({ id: "after_cut" }));
      await until(() => heard.includes("runnable:after_cut"), { what: "wake-up after the reconnect" });
    } finally {
      await unsubscribe();
      await backend.close();
      await db.dropSchema(schema);
    }
  });

  it("wakes a worker in another runtime at once: no polling involved", async () => {
    const schema = db.schema();
    const agent = defineAgent({
      name: "pg_wake",
      tools: { echo: defineTool({ run: (_ctx, { v }: { v: string }) => v.toUpperCase() }) },
      workflows: {
        async go(ctx, { v }: { v: string }) {
          return ctx.tool("echo", { v });
        },
      },
    });
    // Polling once a minute: only a wake-up can start the run, and only one can end the wait.
    const slow = { pollIntervalMs: 60_000 };
    const worker = new Runtime({
      agents: [agent],
      backend: new PostgresBackend({ connectionString: db.url, schema }),
      logger: silentLogger,
      worker: slow,
    });
    const client = new Runtime({
      agents: [agent],
      backend: new PostgresBackend({ connectionString: db.url, schema }),
      logger: silentLogger,
      worker: false,
    });
    try {
      await worker.start();
      await client.start();
      // Let the worker's first poll pass, so the run below can only be found through a wake-up.
      await new Promise((r) => setTimeout(r, 300));
      const handle = await client.run(agent, "go", { v: "hi" });
      const run = await client.waitFor(handle.id, { timeoutMs: 10_000, pollIntervalMs: 60_000 });
      expect(run.state).toBe("COMPLETED");
      expect(run.output).toBe("HI");
      expect((await client.history(handle.id)).transitions[1]?.actor.id).toBe(worker.workerId);
    } finally {
      await client.shutdown();
      await worker.shutdown({ graceMs: 0 });
      await db.dropSchema(schema);
    }
  });
});
