import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDatabase, type TestDatabase } from "../../../test/helpers/postgres.ts";
import { backendsPerTest } from "../../../test/helpers/postgres-backends-per-test.ts";
import { InvalidInputError } from "../../core/errors.ts";
import { endRun, runInput, runningRun } from "../conformance/conformance-fixtures.ts";
import { statements } from "./postgres-statements.ts";

/** Transitions on PostgreSQL (`postgres-transitions.ts`). */

// One database per test file (embedded PostgreSQL, or CAIRN_TEST_DATABASE_URL's server), and one
// schema per backend under test, so nothing here sees another test's rows.
let db: TestDatabase;

beforeAll(async () => {
  db = await startTestDatabase();
});

afterAll(async () => {
  await db?.close();
});

describe("PostgresBackend", () => {
  const { open } = backendsPerTest(() => db);

  it("reads only the rows it needs to lock and plan a batch of endings, however many runs and waits the tables hold", async () => {
    const backend = await open();
    const q = pg.escapeIdentifier(backend.schema);
    // 100,000 runs with a wait each: 100 RUNNING with an open wait, the others ended, their waits resolved.
    await db.query(
      `INSERT INTO ${q}.runs (id, agent, workflow, state, input, epoch, recoveries, last_transition_id, versions, meta, created_at, updated_at)
       SELECT 'r' || lpad(g::text, 6, '0'), 'a', 'w', CASE WHEN g % 1000 = 0 THEN 'RUNNING' ELSE 'COMPLETED' END,
              '{}', 1, 0, 1, '{}', '{}', g, g
       FROM generate_series(1, 100000) AS g`,
    );
    await db.query(
      `INSERT INTO ${q}.waits (run_id, id, seq, kind, name, status, details, created_at)
       SELECT id, 'w1', 1, 'signal', 'go', CASE WHEN state = 'RUNNING' THEN 'open' ELSE 'resolved' END, '{}', 0
       FROM ${q}.runs`,
    );
    await db.query(`ANALYZE ${q}.runs`);
    await db.query(`ANALYZE ${q}.waits`);
    const ending = Array.from({ length: 50 }, (_, i) => `r${String((i + 1) * 1000).padStart(6, "0")}`);
    const s = statements(backend.schema);
    /** The shared buffers a statement read (EXPLAIN ANALYZE runs it), and the rows it returned. */
    const buffersRead = async (text: string, values: unknown[]) => {
      const { rows } = await db.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, values);
      type Plan = { "Shared Hit Blocks": number; "Shared Read Blocks": number; "Actual Rows": number };
      const [root] = (rows[0]?.["QUERY PLAN"] ?? []) as { Plan: Plan }[];
      return {
        blocks: (root?.Plan["Shared Hit Blocks"] ?? 0) + (root?.Plan["Shared Read Blocks"] ?? 0),
        rows: root?.Plan["Actual Rows"],
      };
    };
    const pages = async (table: string) =>
      (await db.query<{ relpages: number }>(`SELECT relpages FROM pg_class WHERE oid = '${q}.${table}'::regclass`))
        .rows[0]?.relpages ?? 0;
    // A scan of either table reads all its blocks; fifty lookups by key read a few each.
    const lock = await buffersRead(s.lockTransitioning.text, [ending, ending]);
    expect(lock.rows).toBe(50);
    expect(lock.blocks).toBeLessThan((await pages("runs")) / 2);
    const waits = await buffersRead(s.loadEndWaitsOf.text, [ending, ending.map(() => null)]);
    expect(waits.rows).toBe(50);
    expect(waits.blocks).toBeLessThan((await pages("waits")) / 2);
  });

  it("refuses a continueAsNew successor whose id is taken and leaves the run as it was", async () => {
    const backend = await open();
    const taken = await backend.createRun(runInput());
    const running = await runningRun(backend, { overrides: { key: "chain" } });
    const error = await endRun(backend, running, "COMPLETED", {
      successor: runInput({ id: taken.run.id, key: "chain" }),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(await backend.getRun(running.id)).toMatchObject({ state: "RUNNING", continuedTo: null });
    expect((await backend.createRun(runInput({ key: "chain" }))).run.id).toBe(running.id);
  });
});
