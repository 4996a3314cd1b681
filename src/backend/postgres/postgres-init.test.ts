import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDatabase, type TestDatabase } from "../../../test/helpers/postgres.ts";
import { backendsPerTest } from "../../../test/helpers/postgres-backends-per-test.ts";
import type { RunRecord } from "../../core/records.ts";
import { LEASE_MS, runInput, T0, VERSIONS } from "../conformance/conformance-fixtures.ts";
import type { PostgresBackend } from "./postgres-backend.ts";
import { MIGRATIONS, SCHEMA_VERSION } from "./postgres-migrations.ts";
import { statements } from "./postgres-statements.ts";

/** `init()` and `migrate()`: the schema created, migrated, checked (`postgres-migrations.ts`). */

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

describe("PostgresBackend", () => {
  const { make, open, initError, schemas } = backendsPerTest(() => db);

  describe("migrations", () => {
    it("creates the schema and applies each migration once; init and migrate() again change nothing", async () => {
      const first = await open();
      const table = `${pg.escapeIdentifier(first.schema)}.cairn_migrations`;
      const applied = (await db.query(`SELECT version, name, applied_at FROM ${table} ORDER BY version`)).rows;
      expect(applied.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
      const tables = await db.query<{ table_name: string }>(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name",
        [first.schema],
      );
      expect(tables.rows.map((r) => r.table_name)).toEqual([
        "blobs",
        "cairn_migrations",
        "journal",
        "rate_limits",
        "runs",
        "schedules",
        "signals",
        "steps",
        "transitions",
        "waits",
      ]);

      const { run } = await first.createRun(runInput({ key: "kept" }));
      const second = await open({ schema: first.schema });
      expect(await second.migrate()).toEqual({ from: SCHEMA_VERSION, to: SCHEMA_VERSION });
      expect((await db.query(`SELECT version, name, applied_at FROM ${table} ORDER BY version`)).rows).toEqual(applied);
      expect(await second.getRun(run.id)).toStrictEqual(run);
    });

    it("migrates a schema at version 1 to the current version with its data intact", async () => {
      const schema = db.schema();
      schemas.add(schema);
      const q = pg.escapeIdentifier(schema);
      // Version 1 as a released Cairn left it: its DDL, recorded, and a run with history.
      await db.query(`CREATE SCHEMA ${q}`);
      await db.query(
        `CREATE TABLE ${q}.cairn_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
      );
      const v1 = MIGRATIONS[0] as (typeof MIGRATIONS)[number];
      await db.query(v1.sql(q));
      await db.query(`INSERT INTO ${q}.cairn_migrations (version, name) VALUES (1, $1)`, [v1.name]);
      const versions = JSON.stringify({ workflow: "wf-1", policy: null, runtime: "0.1.0" });
      await db.query(
        `INSERT INTO ${q}.runs VALUES ('old-1', 'report_builder', 'build', 'k1', 'RUNNING', NULL, '{"b":1,"a":2}',
           NULL, NULL, 1, 'w1', $1, 0, 2, $2, '{"module":"m.ts"}', $3, $4)`,
        [T0 + LEASE_MS, versions, T0, T0 + 1],
      );
      await db.query(
        `INSERT INTO ${q}.transitions VALUES ('old-1', 1, $1, 'user', 'alice', NULL, 'PENDING', NULL, 'started', $2),
           ('old-1', 2, $3, 'worker', 'w1', 'PENDING', 'RUNNING', NULL, 'claimed', $2)`,
        [T0, versions, T0 + 1],
      );
      await db.query(
        `INSERT INTO ${q}.steps VALUES ('old-1', 1, 'tool', 't', 'completed', 'd', '{}', '{"z":0,"y":[1]}', NULL, '[]',
           NULL, NULL, $1, $1, 1)`,
        [T0],
      );

      const backend = make({ schema, migrate: false });
      expect((await initError(backend)).message).toContain(
        `is at Cairn schema version 1, this version of Cairn needs ${SCHEMA_VERSION}`,
      );
      expect(await backend.migrate()).toEqual({ from: 1, to: SCHEMA_VERSION });
      await backend.init();
      const run = (await backend.getRun("old-1")) as RunRecord;
      expect(run).toMatchObject({
        state: "RUNNING",
        key: "k1",
        epoch: 1,
        leaseOwner: "w1",
        lastTransitionId: 2,
        parentRunId: null,
        parentClosePolicy: null,
        stopRequest: undefined,
        continuedFrom: null,
        continuedTo: null,
      });
      expect(JSON.stringify(run.input)).toBe('{"b":1,"a":2}');
      expect((await backend.listTransitions("old-1")).map((t) => t.to)).toEqual(["PENDING", "RUNNING"]);
      expect(JSON.stringify((await backend.loadSteps("old-1"))[0]?.result)).toBe('{"z":0,"y":[1]}');
      expect(await backend.loadWaits("old-1")).toEqual([]);
      expect(await backend.listSignals("old-1")).toEqual([]);
      // The old run keeps its key; the migrated run takes every new operation.
      expect(await backend.createRun(runInput({ key: "k1" }))).toMatchObject({ created: false, run: { id: "old-1" } });
      await backend.requestStop({
        runId: "old-1",
        request: { kind: "cancel", by: { kind: "user", id: "alice" }, reason: "r", at: T0 + 2 },
        versions: VERSIONS,
      });
      expect(await backend.listStopRequested("w1")).toEqual(["old-1"]);
      const applied = await db.query(`SELECT version FROM ${q}.cairn_migrations ORDER BY version`);
      expect(applied.rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
    });

    it("answers the hot queries from their partial indexes", async () => {
      const backend = await open();
      const client = await sharedPool.connect();
      try {
        // Planned as on a large table, so that an index whose predicate the query does not imply
        // (a state list out of step with the migration's) shows up as a sequential scan.
        await client.query("SET enable_seqscan = off");
        const plan = async (text: string, values: unknown[]) =>
          (await client.query(`EXPLAIN ${text}`, values)).rows.map((r) => r["QUERY PLAN"]).join("\n");
        const s = statements(backend.schema);
        expect(await plan(s.claimNext.text, [T0, null])).toContain("runs_claim_order");
        expect(await plan(s.listStopRequested.text, ["w1"])).toContain("runs_stop_requested");
        expect(await plan(s.nextDueAt.text, [])).toContain("waits_due");
        expect(await plan(s.pickDue.text, [T0, 10])).toContain("waits_due");
        expect(await plan(s.listRuns("parent_run_id = $1", 2).text, ["p", 10, 0])).toContain("runs_by_parent");
      } finally {
        await client.query("RESET enable_seqscan");
        client.release();
      }
    });

    it("migrates once when several processes start together on a new schema", async () => {
      const schema = db.schema();
      const backends = Array.from({ length: 4 }, () => make({ schema }));
      await Promise.all(backends.map((b) => b.init()));
      const table = `${pg.escapeIdentifier(schema)}.cairn_migrations`;
      const versions = (await db.query(`SELECT version FROM ${table} ORDER BY version`)).rows.map((r) => r.version);
      expect(versions).toEqual(MIGRATIONS.map((m) => m.version));
      const { run } = await (backends[0] as PostgresBackend).createRun(runInput());
      for (const backend of backends) expect((await backend.getRun(run.id))?.id).toBe(run.id);
    });

    it("refuses a schema newer than this Cairn, with or without migrate", async () => {
      const first = await open();
      await first.close();
      await db.query(
        `INSERT INTO ${pg.escapeIdentifier(first.schema)}.cairn_migrations (version, name) VALUES (99, 'future')`,
      );
      for (const migrate of [true, false]) {
        const error = await initError(make({ schema: first.schema, migrate }));
        expect(error.message).toContain(`schema "${first.schema}"`);
        expect(error.message).toMatch(/schema version 99, newer than .* understands \(\d+\); upgrade Cairn/);
      }
    });

    it("with migrate: false, refuses a schema without Cairn tables and creates nothing", async () => {
      const schema = db.schema();
      const error = await initError(make({ schema, migrate: false }));
      expect(error.message).toContain(`schema "${schema}" has no Cairn tables`);
      expect(error.message).toMatch(/migrate: true/);
      const found = await db.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
      expect(found.rowCount).toBe(0);

      // A deployment step migrates without opening; workers then start with migrate: false.
      expect(await make({ schema, migrate: false }).migrate()).toEqual({ from: 0, to: SCHEMA_VERSION });
      const checked = await open({ schema, migrate: false });
      expect((await checked.createRun(runInput())).created).toBe(true);
    });
  });
});
