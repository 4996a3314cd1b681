import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDatabase, type TestDatabase } from "../../../test/helpers/postgres.ts";
import { backendsPerTest } from "../../../test/helpers/postgres-backends-per-test.ts";
import { defineAgent, defineTool } from "../../agent/define.ts";
import { silentLogger } from "../../core/logger.ts";
import type { RunRecord, StepRecord } from "../../core/records.ts";
import { Runtime } from "../../runtime/runtime.ts";
import { runBackendConformance } from "../conformance/backend-conformance.ts";
import { fullStep, LEASE_MS, runInput, T0 } from "../conformance/conformance-fixtures.ts";
import { PostgresBackend } from "./postgres-backend.ts";

/** The conformance suite on PostgreSQL, and what the backend keeps as a whole (DESIGN §7). */

// One database per test file (embedded PostgreSQL, or CAIRN_TEST_DATABASE_URL's server), and one
// schema per backend under test, so nothing here sees another test's rows.
let db: TestDatabase;
let sharedPool: pg.Pool;

beforeAll(async () => {
  db = await startTestDatabase();
  sharedPool = new pg.Pool({ connectionString: db.url, max: 4 });
  sharedPool.on("error", () => {});
});

afterAll(async () => {
  await sharedPool?.end();
  await db?.close();
});

runBackendConformance("postgres", () => new PostgresBackend({ connectionString: db.url, schema: db.schema() }), {
  cleanup: (backend) => db.dropSchema(backend.schema),
  wakeUps: true,
  transitionFeed: true,
  schedules: true,
});
runBackendConformance(
  "postgres (process durability, pool passed in)",
  () => new PostgresBackend({ pool: sharedPool, schema: db.schema(), durability: "process" }),
  { cleanup: (backend) => db.dropSchema(backend.schema), wakeUps: true, transitionFeed: true, schedules: true },
);

describe("PostgresBackend", () => {
  const { open } = backendsPerTest(() => db);

  it("keeps two schemas of one database apart", async () => {
    const a = await open();
    const b = await open();
    const input = runInput({ key: "same-key" });
    await a.createRun(input);
    expect(await b.getRun(input.id)).toBeUndefined();
    expect(await b.listRuns()).toEqual([]);
    expect(await b.claimRun({ workerId: "wb", now: T0, leaseMs: LEASE_MS })).toBeUndefined();
    // The same id and key are free in the other schema.
    expect((await b.createRun(input)).created).toBe(true);
    expect((await a.createRun(input)).created).toBe(false);
    const claimed = (await b.claimRun({ workerId: "wb", now: T0, leaseMs: LEASE_MS })) as RunRecord;
    expect(claimed.id).toBe(input.id);
    expect((await a.getRun(input.id))?.leaseOwner).toBeNull();
  });

  it("keeps JSON as written: key order, NUL characters, unicode and large numbers", async () => {
    const backend = await open();
    const { run } = await backend.createRun(runInput({ input: { z: 1, a: [{ y: 2, b: 3 }] } }));
    const byW = (await backend.claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS })) as RunRecord;
    const odd = { zeta: "a\u0000b", alpha: "snow ☃ and 🧗", big: 2 ** 60, tiny: 5e-324, neg: -0.5 };
    const step: StepRecord = { ...fullStep(run.id, 1, byW.epoch), args: odd, result: { b: odd, a: null } };
    await backend.saveSteps([step], { epoch: byW.epoch, sync: true });
    const [loaded] = await backend.loadSteps(run.id);
    expect(JSON.stringify(loaded?.result)).toBe(JSON.stringify(step.result));
    expect(JSON.stringify(loaded?.args)).toBe(JSON.stringify(odd));
    expect(JSON.stringify((await backend.getRun(run.id))?.input)).toBe('{"z":1,"a":[{"y":2,"b":3}]}');
  });
});

describe("Runtime on PostgresBackend", () => {
  it("runs a five-tool workflow to COMPLETED", async () => {
    const add = (n: number) => defineTool({ run: (_ctx, { v }: { v: number }) => v + n });
    const agent = defineAgent({
      name: "pg_smoke",
      tools: { t1: add(1), t2: add(2), t3: add(3), t4: add(4), t5: add(5) },
      workflows: {
        async chain(ctx, { start }: { start: number }) {
          let v = start;
          for (const tool of ["t1", "t2", "t3", "t4", "t5"] as const) v = await ctx.tool(tool, { v });
          return { total: v };
        },
      },
    });
    const backend = new PostgresBackend({ connectionString: db.url, schema: db.schema() });
    const runtime = new Runtime({ agents: [agent], backend, logger: silentLogger });
    try {
      await runtime.start();
      const handle = await runtime.run(agent, "chain", { start: 10 });
      expect(await handle.result({ timeoutMs: 10_000 })).toEqual({ total: 25 });
      const history = await runtime.history(handle.id);
      expect(history.transitions.map((t) => [t.from, t.to])).toEqual([
        [null, "PENDING"],
        ["PENDING", "RUNNING"],
        ["RUNNING", "COMPLETED"],
      ]);
      expect(history.steps.map((s) => [s.seq, s.name, s.status, s.result])).toEqual([
        [1, "t1", "completed", 11],
        [2, "t2", "completed", 13],
        [3, "t3", "completed", 16],
        [4, "t4", "completed", 20],
        [5, "t5", "completed", 25],
      ]);
      expect(history.run).toMatchObject({ state: "COMPLETED", epoch: 1, leaseOwner: null });
    } finally {
      await runtime.shutdown({ graceMs: 0 });
      await db.dropSchema(backend.schema);
    }
  });
});
