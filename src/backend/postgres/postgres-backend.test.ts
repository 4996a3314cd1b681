import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createServer } from "node:net";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { hookQueries, startTestDatabase, type TestDatabase, withDatabase } from "../../../test/helpers/postgres.ts";
import { until } from "../../../test/helpers/runtime-helpers.ts";
import { defineAgent, defineTool } from "../../agent/define.ts";
import { InvalidDefinitionError, InvalidInputError, LeaseLostError, StorageError } from "../../core/errors.ts";
import { silentLogger } from "../../core/logger.ts";
import type { RunRecord, StepRecord, WaitRecord } from "../../core/records.ts";
import { Runtime } from "../../runtime/runtime.ts";
import { runBackendConformance } from "../conformance/backend-conformance.ts";
import {
  endRun,
  fullStep,
  LEASE_MS,
  move,
  newRun,
  pausedRun,
  runInput,
  runningRun,
  startedStep,
  suspendRequest,
  T0,
  VERSIONS,
  waitRecord,
} from "../conformance/conformance-fixtures.ts";
import { largeJson } from "../conformance/journal-conformance.ts";
import { applyTransition } from "../rules/transition-rules.ts";
import { PostgresBackend, type PostgresBackendOptions } from "./postgres-backend.ts";
import { wakeChannel } from "./postgres-listener.ts";
import { MIGRATIONS, SCHEMA_VERSION } from "./postgres-migrations.ts";
import { statements } from "./postgres-statements.ts";

/** Whether iproute2's `ss` is here to show a socket's kernel timers. */
const hasSs = (() => {
  try {
    execFileSync("ss", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

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
});
runBackendConformance(
  "postgres (process durability, pool passed in)",
  () => new PostgresBackend({ pool: sharedPool, schema: db.schema(), durability: "process" }),
  { cleanup: (backend) => db.dropSchema(backend.schema), wakeUps: true, transitionFeed: true },
);

describe("PostgresBackend", () => {
  const opened: PostgresBackend[] = [];
  const schemas = new Set<string>();
  const roles: string[] = [];

  function make(options: PostgresBackendOptions = {}): PostgresBackend {
    const backend = new PostgresBackend({
      ...(options.pool ? {} : { connectionString: db.url }),
      ...options,
      schema: options.schema ?? db.schema(),
    });
    schemas.add(backend.schema);
    opened.push(backend);
    return backend;
  }

  async function open(options: PostgresBackendOptions = {}): Promise<PostgresBackend> {
    const backend = make(options);
    await backend.init();
    return backend;
  }

  async function initError(backend: PostgresBackend): Promise<Error> {
    const error = await backend.init().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StorageError);
    return error as Error;
  }

  afterEach(async () => {
    for (const backend of opened.splice(0)) await backend.close();
    for (const schema of schemas) await db.dropSchema(schema);
    schemas.clear();
    for (const role of roles.splice(0)) {
      // Roles belong to the server, not the test database: never leave one behind.
      await db.query(`DROP OWNED BY ${pg.escapeIdentifier(role)}`).catch(() => undefined);
      await db.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(role)}`);
    }
  });

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
        "runs",
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
        expect(await plan(s.claimNext.text, [T0, null])).toContain("runs_runnable");
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

  it("hands each of 100 runs to exactly one of 4 pools claiming concurrently", async () => {
    const schema = db.schema();
    const pools = [await open({ schema, max: 3 })];
    for (let i = 1; i < 4; i++) pools.push(await open({ schema, max: 3 }));
    const ids = new Set<string>();
    for (let i = 0; i < 100; i++) ids.add((await pools[i % 4]?.createRun(runInput({ at: T0 + i })))?.run.id ?? "");

    // Three claim loops per pool: twelve claimers racing over the same rows.
    const got = await Promise.all(
      pools.flatMap((backend, p) =>
        [0, 1, 2].map(async (loop) => {
          const workerId = `p${p}-l${loop}`;
          const mine: RunRecord[] = [];
          for (;;) {
            const run = await backend.claimRun({ workerId, now: T0 + 1_000, leaseMs: LEASE_MS });
            if (!run) return mine;
            mine.push(run);
          }
        }),
      ),
    );
    const all = got.flat();
    expect(all).toHaveLength(100);
    expect(new Set(all.map((r) => r.id))).toEqual(ids);
    expect(got.filter((mine) => mine.length > 0).length).toBeGreaterThanOrEqual(2);
    for (const run of all) expect(run.epoch).toBe(1);
    const stored = await pools[0]?.listRuns({ limit: 200 });
    const owners = new Map(all.map((r) => [r.id, r.leaseOwner]));
    for (const run of stored ?? []) expect(run.leaseOwner).toBe(owners.get(run.id));
  });

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

  it("finds claims of PENDING runs whose lease lapsed without reading a backlog of PENDING runs", async () => {
    const backend = await open();
    const q = pg.escapeIdentifier(backend.schema);
    // A backlog of 100,000 PENDING runs nobody has claimed, and one claimed whose worker is gone.
    await db.query(
      `INSERT INTO ${q}.runs (id, agent, workflow, state, input, epoch, recoveries, last_transition_id, versions, meta, created_at, updated_at,
                              lease_owner, lease_expires_at)
       SELECT 'r' || lpad(g::text, 6, '0'), 'a', 'w', 'PENDING', '{}', CASE WHEN g = 7 THEN 1 ELSE 0 END, 0, 1, '{}', '{}', g, g,
              CASE WHEN g = 7 THEN 'gone:1:x' END, CASE WHEN g = 7 THEN 5 END
       FROM generate_series(1, 100000) AS g`,
    );
    await db.query(`ANALYZE ${q}.runs`);
    expect((await backend.listExpiredLeases(10, 100)).map((r) => r.id)).toEqual(["r000007"]);
    const { rows } = await db.query(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statements(backend.schema).listExpired.text}`,
      [10, 100],
    );
    type Plan = { "Shared Hit Blocks": number; "Shared Read Blocks": number };
    const plan = ((rows[0]?.["QUERY PLAN"] ?? []) as { Plan: Plan }[])[0]?.Plan;
    const pages = (
      await db.query<{ relpages: number }>(`SELECT relpages FROM pg_class WHERE oid = '${q}.runs'::regclass`)
    ).rows[0]?.relpages;
    expect((plan?.["Shared Hit Blocks"] ?? 0) + (plan?.["Shared Read Blocks"] ?? 0)).toBeLessThan((pages ?? 0) / 10);
  });

  it("claims with start: the PENDING runs go RUNNING in the claim's statement, as the shared rule moves them; other runs are leased only", async () => {
    const backend = await open();
    const fresh = [await newRun(backend, { at: T0 }), await newRun(backend, { at: T0 + 1 })];
    // A PENDING run of an agent the claim names no versions for.
    const unnamed = await newRun(backend, { at: T0 + 2, agent: "other_agent" });
    // A run whose worker was lost: INTERRUPTED, then RESUMING with its lease let go.
    const lost = await runningRun(backend, { now: T0 + 3, overrides: { at: T0 + 3 } });
    const { run: interrupted } = await backend.transition(
      move(lost, "RUNNING", "INTERRUPTED", { patch: { releaseLease: true } }),
    );
    await backend.transition(move(interrupted, "INTERRUPTED", "RESUMING"));
    const otherVersions = { ...VERSIONS, workflow: "wf-other" };
    const start = {
      actor: { kind: "worker", id: "w2" } as const,
      reason: "claimed by worker w2",
      versions: { report_builder: VERSIONS, unused: otherVersions },
    };
    const now = T0 + 5_000;
    const claimed = await backend.claimRuns({ workerId: "w2", now, leaseMs: LEASE_MS, limit: 10, start });
    expect(claimed.map((c) => c.run.id)).toEqual([...fresh.map((r) => r.id), unnamed.id, lost.id]);
    for (const [i, { run, started }] of claimed.slice(0, 2).entries()) {
      // What `transition` would have written for the same move, by the rule every backend shares.
      const leased = { ...(fresh[i] as RunRecord), epoch: 1, leaseOwner: "w2", leaseExpiresAt: now + LEASE_MS };
      const expected = applyTransition(leased, {
        runId: leased.id,
        from: "PENDING",
        to: "RUNNING",
        at: now,
        fence: { epoch: 1 },
        actor: start.actor,
        reason: start.reason,
        versions: VERSIONS,
      });
      expect(run).toEqual(expected.run);
      expect(started).toEqual(expected.transition);
      expect(await backend.listTransitions(run.id)).toEqual([expect.objectContaining({ to: "PENDING" }), started]);
      expect(await backend.getRun(run.id)).toEqual(run);
    }
    // The run of an agent without versions, and the run claimed in RESUMING, are leased, not moved:
    // their worker records RUNNING (or FAILED, for an unknown agent) itself.
    for (const [c, state] of [
      [claimed[2], "PENDING"],
      [claimed[3], "RESUMING"],
    ] as const) {
      expect(c?.started).toBeUndefined();
      expect([c?.run.state, c?.run.leaseOwner]).toEqual([state, "w2"]);
      expect((await backend.listTransitions(c?.run.id ?? "")).at(-1)?.to).toBe(state);
    }
    // The feed holds each new transition once, after the run's earlier ones.
    const feed = (await backend.listTransitionsSince({ after: null, limit: 100 })).transitions;
    for (const { run } of claimed.slice(0, 2)) {
      expect(feed.filter((e) => e.transition.runId === run.id).map((e) => e.transition.id)).toEqual([1, 2]);
    }
    // A PENDING run whose last transition the claim's statement cannot see (one that committed
    // after the statement began, as a row counter ahead of the transitions read leaves it) is
    // leased only: its RUNNING transition would get a feed key below that transition's.
    const q = pg.escapeIdentifier(backend.schema);
    const raced = await newRun(backend, { at: T0 + 6 });
    await db.query(`UPDATE ${q}.runs SET last_transition_id = 2 WHERE id = $1`, [raced.id]);
    const [late] = await backend.claimRuns({ workerId: "w3", now, leaseMs: LEASE_MS, limit: 10, start });
    expect([late?.run.id, late?.run.state, late?.run.leaseOwner, late?.started]).toEqual([
      raced.id,
      "PENDING",
      "w3",
      undefined,
    ]);
    // The RUNNING runs are fenced by the claim's epoch like any: a step under it is stored.
    const [first] = claimed;
    await backend.saveSteps([startedStep(first?.run.id ?? "", 1, first?.run.epoch ?? 0)], {
      epoch: first?.run.epoch ?? 0,
      sync: true,
    });
    expect((await backend.loadSteps(first?.run.id ?? "")).map((step) => step.seq)).toEqual([1]);
  });

  it("claims in batches: oldest first, each of 100 runs to exactly one of 4 pools claiming 7 at a time", async () => {
    const schema = db.schema();
    const pools = [await open({ schema, max: 3 })];
    for (let i = 1; i < 4; i++) pools.push(await open({ schema, max: 3 }));
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) ids.push((await pools[0]?.createRun(runInput({ at: T0 + i })))?.run.id ?? "");
    const first = (
      (await pools[0]?.claimRuns({ workerId: "first", now: T0 + 1_000, leaseMs: LEASE_MS, limit: 3 })) ?? []
    ).map((c) => c.run);
    expect(first.map((r) => r.id)).toEqual(ids.slice(0, 3));
    expect(first.map((r) => [r.leaseOwner, r.epoch, r.leaseExpiresAt])).toEqual(
      Array(3).fill(["first", 1, T0 + 1_000 + LEASE_MS]),
    );
    const got = await Promise.all(
      pools.map(async (backend, p) => {
        const mine: RunRecord[] = [];
        for (;;) {
          const claimed = await backend.claimRuns({ workerId: `p${p}`, now: T0 + 1_000, leaseMs: LEASE_MS, limit: 7 });
          const runs = claimed.map((c) => c.run);
          if (runs.length === 0) return mine;
          expect(runs.length).toBeLessThanOrEqual(7);
          mine.push(...runs);
        }
      }),
    );
    const all = [...first, ...got.flat()];
    expect(all).toHaveLength(100);
    expect(new Set(all.map((r) => r.id))).toEqual(new Set(ids));
    const stored = await pools[0]?.listRuns({ limit: 200 });
    const owners = new Map(all.map((r) => [r.id, r.leaseOwner]));
    for (const run of stored ?? []) expect(run.leaseOwner).toBe(owners.get(run.id));
    // A run someone holds under a live lease is not claimed again.
    expect(await pools[1]?.claimRuns({ workerId: "late", now: T0 + 2_000, leaseMs: LEASE_MS, limit: 10 })).toEqual([]);
  });

  it("refuses every write of a pool whose run another pool claimed after the lease lapsed", async () => {
    const a = await open();
    const b = await open({ schema: a.schema });
    const { run } = await a.createRun(runInput());
    const byA = (await a.claimRun({ workerId: "wa", now: T0, leaseMs: LEASE_MS })) as RunRecord;
    await a.saveSteps([startedStep(run.id, 1, byA.epoch)], { epoch: byA.epoch, sync: false });
    expect(await b.claimRun({ workerId: "wb", now: T0 + LEASE_MS - 1, leaseMs: LEASE_MS })).toBeUndefined();
    const byB = (await b.claimRun({ workerId: "wb", now: T0 + LEASE_MS, leaseMs: LEASE_MS })) as RunRecord;
    expect(byB.epoch).toBe(2);
    const before = { steps: await b.loadSteps(run.id), transitions: await b.listTransitions(run.id) };

    for (const sync of [true, false]) {
      const error = await a.saveSteps([fullStep(run.id, 1, 1)], { epoch: 1, sync }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LeaseLostError);
      expect((error as Error).message).toBe(
        `run ${run.id}: step 1 under lease epoch 1 refused, the run is at epoch 2; this worker lost the run`,
      );
    }
    await expect(a.transition(move(byA, "PENDING", "RUNNING"))).rejects.toBeInstanceOf(LeaseLostError);
    const lost = await a.renewLeases({
      workerId: "wa",
      now: T0 + LEASE_MS,
      leaseMs: LEASE_MS,
      runs: [{ runId: byA.id, epoch: byA.epoch }],
    });
    expect(lost).toEqual([run.id]);
    expect({ steps: await a.loadSteps(run.id), transitions: await a.listTransitions(run.id) }).toStrictEqual(before);

    await b.transition(move(byB, "PENDING", "RUNNING"));
    await b.saveSteps([fullStep(run.id, 1, byB.epoch)], { epoch: byB.epoch, sync: true });
    expect((await a.loadSteps(run.id)).map((s) => [s.seq, s.status, s.epoch])).toEqual([[1, "completed", 2]]);
    expect(await a.getRun(run.id)).toMatchObject({ state: "RUNNING", leaseOwner: "wb", epoch: 2 });
  });

  it("refuses a step write that waited on the run row while another worker took the run over", async () => {
    const backend = await open();
    const { run } = await backend.createRun(runInput());
    const claimedRun = (await backend.claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS })) as RunRecord;
    const runs = `${pg.escapeIdentifier(backend.schema)}.runs`;
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    try {
      // Another worker's claim holds the row; the step write must wait for it, then see epoch 2.
      await other.query("BEGIN");
      await other.query(`SELECT * FROM ${runs} WHERE id = $1 FOR UPDATE`, [run.id]);
      const write = backend
        .saveSteps([fullStep(run.id, 1, claimedRun.epoch)], { epoch: claimedRun.epoch, sync: true })
        .then(
          () => "stored",
          (e: unknown) => e,
        );
      await until(async () => {
        const waiting = await db.query(
          "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        );
        return (waiting.rowCount ?? 0) > 0;
      });
      await other.query(`UPDATE ${runs} SET epoch = epoch + 1, lease_owner = 'w2' WHERE id = $1`, [run.id]);
      await other.query("COMMIT");
      expect(await write).toBeInstanceOf(LeaseLostError);
    } finally {
      await other.end();
    }
    expect(await backend.loadSteps(run.id)).toEqual([]);
  });

  it("passes what a resolveWait decision throws to the caller as it is, and writes nothing", async () => {
    const backend = await open();
    const { run } = await pausedRun(backend, [{ seq: 1, kind: "user", name: "Which region?" }], {
      pausedReason: "awaiting_user",
    });
    const thrown = new TypeError("schema check blew up");
    const error = await backend
      .resolveWait({
        runId: run.id,
        waitId: "w1",
        decide: () => {
          throw thrown;
        },
        actor: { kind: "user", id: "alice" },
        reason: "answered",
        versions: VERSIONS,
        at: T0 + 500,
      })
      .catch((e: unknown) => e);
    expect(error).toBe(thrown);
    expect((await backend.loadWaits(run.id))[0]?.status).toBe("open");
    expect((await backend.getRun(run.id))?.state).toBe("PAUSED");
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

  describe("out-of-line payloads", () => {
    const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
    const reference = (text: string) => `{"$cairnBlob":"sha256:${sha256(text)}","bytes":${Buffer.byteLength(text)}}`;

    /** The step columns (as text) as the journal's latest entry of each seq holds them, and the blobs. */
    async function stored(schema: string): Promise<{
      steps: { seq: number; args: string | null; result: string | null }[];
      blobs: { digest: string; text: string; bytes: number }[];
    }> {
      const q = pg.escapeIdentifier(schema);
      const steps = await db.query(
        `SELECT DISTINCT ON (run_id, seq) seq, args, result
         FROM (SELECT j.run_id, j.id, (e->>'seq')::integer AS seq, e->>'args' AS args, e->>'result' AS result
               FROM ${q}.journal j, json_array_elements(j.steps) e) t
         ORDER BY run_id, seq, id DESC`,
      );
      const blobs = await db.query(`SELECT digest, text, bytes::integer AS bytes FROM ${q}.blobs ORDER BY digest`);
      return { steps: steps.rows as never, blobs: blobs.rows as never };
    }

    it("stores a large result once in blobs, each step row holding a reference, and loads the value", async () => {
      const backend = await open();
      const run = await runningRun(backend);
      const result = largeJson("result", 1_000_000);
      const text = JSON.stringify(result);
      const first: StepRecord = { ...fullStep(run.id, 1, run.epoch), result };
      const second: StepRecord = { ...fullStep(run.id, 2, run.epoch), result };
      await backend.saveSteps([first], { epoch: run.epoch, sync: true });
      await backend.saveSteps([second], { epoch: run.epoch, sync: true });
      await backend.saveSteps([first, { ...second }], { epoch: run.epoch, sync: false });
      const { steps, blobs } = await stored(backend.schema);
      expect(steps).toEqual([
        { seq: 1, args: JSON.stringify(first.args), result: reference(text) },
        { seq: 2, args: JSON.stringify(second.args), result: reference(text) },
      ]);
      expect(blobs).toEqual([{ digest: sha256(text), text, bytes: Buffer.byteLength(text) }]);
      expect(await backend.loadSteps(run.id)).toStrictEqual([first, second]);
      const other = await open({ schema: backend.schema });
      expect(await other.loadSteps(run.id)).toStrictEqual([first, second]);
    });

    it("keeps JSON text of exactly the inline limit in the row and stores one byte more out of line", async () => {
      // The limit counts UTF-8 bytes: "é" takes two.
      const atLimit = "é".repeat(499); // 2 + 998 bytes of JSON text
      const over = `${atLimit}a`;
      const small = await open({ inlineLimitBytes: 1000 });
      const run = await runningRun(small);
      const step: StepRecord = { ...fullStep(run.id, 1, run.epoch), args: atLimit, result: over };
      await small.saveSteps([step], { epoch: run.epoch, sync: true });
      expect((await stored(small.schema)).steps).toEqual([
        { seq: 1, args: JSON.stringify(atLimit), result: reference(JSON.stringify(over)) },
      ]);
      expect(await small.loadSteps(run.id)).toStrictEqual([step]);

      // The default limit: 256 KiB.
      const backend = await open();
      const other = await runningRun(backend);
      const under = "x".repeat(256 * 1024 - 2);
      const above = "y".repeat(256 * 1024 - 1);
      const big: StepRecord = { ...fullStep(other.id, 1, other.epoch), args: under, result: above };
      await backend.saveSteps([big], { epoch: other.epoch, sync: true });
      const { steps, blobs } = await stored(backend.schema);
      expect(steps[0]?.args).toBe(JSON.stringify(under));
      expect(steps[0]?.result).toBe(reference(JSON.stringify(above)));
      expect(blobs.map((b) => b.bytes)).toEqual([256 * 1024 + 1]);
      expect(await backend.loadSteps(other.id)).toStrictEqual([big]);
    });

    it("writes no blob when the fence refuses the step that refers to it", async () => {
      const backend = await open();
      const run = await runningRun(backend);
      const large = { ...fullStep(run.id, 1, run.epoch), result: largeJson("refused", 300_000) };
      for (const steps of [[large], [startedStep(run.id, 2, run.epoch), large]]) {
        const error = await backend.saveSteps(steps, { epoch: run.epoch + 1, sync: true }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LeaseLostError);
      }
      expect(await stored(backend.schema)).toEqual({ steps: [], blobs: [] });
    });

    it("stores the same large result from two pools at once as one blob", async () => {
      const a = await open();
      const b = await open({ schema: a.schema });
      const one = await runningRun(a);
      const two = await runningRun(b);
      const result = largeJson("shared", 500_000);
      await Promise.all([
        a.saveSteps([{ ...fullStep(one.id, 1, one.epoch), result }], { epoch: one.epoch, sync: true }),
        b.saveSteps([{ ...fullStep(two.id, 1, two.epoch), result }], { epoch: two.epoch, sync: true }),
      ]);
      expect((await stored(a.schema)).blobs).toHaveLength(1);
      expect((await b.loadSteps(one.id))[0]?.result).toStrictEqual(result);
      expect((await a.loadSteps(two.id))[0]?.result).toStrictEqual(result);
    });
  });

  // Reads each socket's timer with iproute2's `ss` (Linux): skipped only where that tool is missing.
  it.skipIf(!hasSs)(
    "turns TCP keepalive on for the connections of its own pool and its listener, not for a pool it borrows",
    async () => {
      const backend = await open({ applicationName: "cairn-keepalive-test" });
      const unsubscribe = await backend.subscribe(() => {});
      try {
        await backend.getRun("run_missing");
        // The client side of each connection, as the server sees it (TCP: the client's local port).
        const ports = async (where: string, values: unknown[]) =>
          (
            await db.query<{ port: number }>(
              `SELECT client_port AS port FROM pg_stat_activity WHERE datname = current_database() AND ${where}`,
              values,
            )
          ).rows.map((r) => r.port);
        const own = await ports("application_name = $1", ["cairn-keepalive-test"]);
        const listener = await ports("application_name = 'cairn-listener' AND query = $1", [
          `LISTEN ${pg.escapeIdentifier(wakeChannel(backend.schema))}`,
        ]);
        const borrowed = (await sharedPool.query<{ port: number }>("SELECT inet_client_port() AS port")).rows.map(
          (r) => r.port,
        );
        expect(own.length).toBeGreaterThan(0);
        expect(listener).toHaveLength(1);
        expect(borrowed).toHaveLength(1);
        // `ss -o` shows the kernel's timer on a socket: `timer:(keepalive,…)` once SO_KEEPALIVE is set.
        const timer = (port: number) =>
          execFileSync("ss", ["-tnoH", "state", "established", `( sport = :${port} )`], { encoding: "utf8" });
        for (const port of [...own, ...listener]) expect(timer(port)).toMatch(/timer:\(keepalive,/);
        for (const port of borrowed) {
          expect(timer(port)).toContain(`:${port}`);
          expect(timer(port)).not.toMatch(/keepalive/);
        }
      } finally {
        await unsubscribe();
      }
    },
  );

  it("commits start records and renewals without waiting for the WAL flush, results with it", async () => {
    const levels = async (durability: "machine" | "process") => {
      const pool = new pg.Pool({ connectionString: db.url, max: 2 });
      const seen: unknown[] = [];
      const query = pool.query.bind(pool) as (config: pg.QueryConfig) => Promise<pg.QueryResult>;
      vi.spyOn(pool, "query").mockImplementation(((config: pg.QueryConfig) => {
        if (typeof config === "object" && config.text.includes("set_config")) {
          seen.push(config.text.includes("INSERT INTO") ? (config.values?.[2] ?? "server default") : "off");
        }
        return query(config);
      }) as never);
      try {
        const backend = await open({ pool, durability });
        const { run } = await backend.createRun(runInput());
        const c = (await backend.claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS })) as RunRecord;
        await backend.saveSteps([startedStep(run.id, 1, c.epoch)], { epoch: c.epoch, sync: false });
        await backend.saveSteps([fullStep(run.id, 1, c.epoch)], { epoch: c.epoch, sync: true });
        await backend.renewLeases({
          workerId: "w1",
          now: T0 + 1,
          leaseMs: LEASE_MS,
          runs: [{ runId: c.id, epoch: c.epoch }],
        });
        expect((await backend.loadSteps(run.id))[0]?.status).toBe("completed");
        return seen;
      } finally {
        await pool.end();
      }
    };
    expect(await levels("machine")).toEqual(["off", "server default", "off"]);
    expect(await levels("process")).toEqual(["off", "off", "off"]);
  });

  describe("errors", () => {
    it("names the server and the fix when nothing listens at the URL", async () => {
      const port = await closedPort();
      const backend = make({
        connectionString: `postgres://cairn:secret@127.0.0.1:${port}/app`,
        connectTimeoutMs: 2_000,
      });
      const error = await initError(backend);
      expect(error.message).toContain(`postgres://cairn@127.0.0.1:${port}/app`);
      expect(error.message).not.toContain("secret");
      expect(error.message).toMatch(/ECONNREFUSED.*check the host and port .* server is running/);
      await expect(backend.getRun("x")).rejects.toThrow(/not open; call init\(\) first/);
    });

    it("names a database that does not exist", async () => {
      const error = await initError(make({ connectionString: withDatabase(db.url, "cairn_no_such_database") }));
      expect(error.message).toMatch(/database "cairn_no_such_database" does not exist \(3D000\); create the database/);
    });

    it("names a user the server refuses", async () => {
      const url = new URL(db.url);
      url.username = "cairn_no_such_role";
      url.password = "wrong";
      const error = await initError(make({ connectionString: url.toString() }));
      expect(error.message).toMatch(/\((28P01|28000)\)/);
      expect(error.message).toMatch(/"cairn_no_such_role".*check the user/);
    });

    it("names a missing permission, and runs on a schema an owner migrated for that role", async () => {
      const role = `cairn_role_${Math.random().toString(36).slice(2, 8)}`;
      roles.push(role);
      await db.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw'`);
      const url = new URL(db.url);
      url.username = role;
      url.password = "pw";
      const schema = db.schema();
      const error = await initError(make({ connectionString: url.toString(), schema }));
      expect(error.message).toMatch(
        /permission denied for database .*\(42501\); grant the role CREATE on the database/,
      );

      const owner = await open({ schema });
      const q = pg.escapeIdentifier(schema);
      await db.query(`GRANT USAGE ON SCHEMA ${q} TO ${role}`);
      await db.query(`GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA ${q} TO ${role}`);
      const worker = await open({ connectionString: url.toString(), schema, migrate: false });
      const { run } = await worker.createRun(runInput());
      expect((await owner.getRun(run.id))?.id).toBe(run.id);
    });

    it("refuses bad options", () => {
      expect(() => new PostgresBackend({ schema: "x".repeat(64) })).toThrow(InvalidDefinitionError);
      expect(() => new PostgresBackend({ schema: "" })).toThrow(InvalidDefinitionError);
      expect(() => new PostgresBackend({ max: 0 })).toThrow(/max must be/);
      for (const inlineLimitBytes of [-1, 1.5, Number.NaN]) {
        expect(() => new PostgresBackend({ connectionString: db.url, inlineLimitBytes })).toThrow(
          InvalidDefinitionError,
        );
      }
      expect(() => new PostgresBackend({ pool: sharedPool, connectionString: db.url })).toThrow(/not both/);
      for (const transactionIdleTimeoutMs of [-1, 1.5, Number.NaN, 2 ** 31]) {
        expect(() => new PostgresBackend({ transactionIdleTimeoutMs })).toThrow(/transactionIdleTimeoutMs must be/);
      }
    });

    it("bounds idle gaps inside each of its transactions, on a pool it was given too", async () => {
      const texts: string[] = [];
      const pool = new pg.Pool({ connectionString: db.url, max: 2 });
      pool.on("error", () => {});
      hookQueries(pool, (text, result) => {
        texts.push(text);
        return result;
      });
      try {
        for (const [options, begin] of [
          [{}, "BEGIN; SET LOCAL idle_in_transaction_session_timeout = 10000"],
          [{ transactionIdleTimeoutMs: 250 }, "BEGIN; SET LOCAL idle_in_transaction_session_timeout = 250"],
          [{ transactionIdleTimeoutMs: 0 }, "BEGIN"],
        ] as const) {
          const backend = await open({ pool, ...options });
          await backend.createRun(runInput());
          texts.length = 0;
          expect(await backend.claimRun({ workerId: "w", now: T0, leaseMs: LEASE_MS })).toBeDefined();
          expect(texts.filter((t) => t.startsWith("BEGIN"))).toEqual([begin]);
        }
      } finally {
        await pool.end();
      }
    });

    it("refuses calls before init and after close, and leaves a pool it was given open", async () => {
      const backend = make({ pool: sharedPool });
      await expect(backend.getRun("x")).rejects.toThrow(/call init\(\) first/);
      await backend.init();
      await backend.init();
      expect(await backend.getRun("x")).toBeUndefined();
      await backend.close();
      await backend.close();
      await expect(backend.listRuns()).rejects.toBeInstanceOf(StorageError);
      expect((await sharedPool.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
      await backend.init();
      expect(await backend.listRuns()).toEqual([]);
    });
  });
});

describe("PostgresBackend waits under concurrency", () => {
  const opened: PostgresBackend[] = [];
  let schema = "";

  /** `count` backends (pools) on one fresh schema: separate connections, truly concurrent. */
  async function pools(count: number, max = 4): Promise<PostgresBackend[]> {
    schema = db.schema();
    for (let i = 0; i < count; i++) {
      const backend = new PostgresBackend({ connectionString: db.url, schema, max });
      await backend.init();
      opened.push(backend);
    }
    return opened.slice(-count);
  }

  afterEach(async () => {
    for (const backend of opened.splice(0)) await backend.close();
    await db.dropSchema(schema);
  });

  it("ends runs, their parents and their children at the same moment without a deadlock", async () => {
    // One backend per end, so that each end is a transaction of its own (a backend batches the
    // transitions it is asked for at once: see the next test).
    const ending = await pools(15, 2);
    const a = ending[0] as PostgresBackend;
    // Families of three generations, every run RUNNING under its own worker. An end locks the
    // run, its parent and its open children, all in id order, while the top runs are held below so
    // that the ends pile up. Were the run itself locked first, the middle end would hold the middle
    // run while waiting for the top one, the bottom end would wait for the middle run while holding
    // the bottom one, and the middle end would then wait for the bottom one: a deadlock.
    const families: RunRecord[][] = [];
    for (let i = 0; i < 5; i++) {
      const top = await runningRun(a, { workerId: "w1" });
      const middle = await runningRun(a, { workerId: "w2", overrides: { parentRunId: top.id } });
      const bottom = await runningRun(a, {
        workerId: "w3",
        overrides: { parentRunId: middle.id, parentClosePolicy: "cancel" },
      });
      families.push([top, middle, bottom]);
    }
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    let settled: PromiseSettledResult<unknown>[];
    try {
      await holder.query("BEGIN");
      const tops = families.map(([top]) => (top as RunRecord).id);
      await holder.query(`SELECT id FROM ${pg.escapeIdentifier(schema)}.runs WHERE id = ANY ($1) FOR UPDATE`, [tops]);
      const ends = Promise.allSettled(
        families.flatMap(([top, middle, bottom], i) => [
          endRun(ending[3 * i] as PostgresBackend, middle as RunRecord),
          endRun(ending[3 * i + 1] as PostgresBackend, bottom as RunRecord),
          endRun(ending[3 * i + 2] as PostgresBackend, top as RunRecord),
        ]),
      );
      await until(async () => {
        const waiting = await db.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        );
        return (waiting.rows[0]?.n ?? 0) >= 2 * families.length;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await holder.query("COMMIT");
      settled = await ends;
    } finally {
      await holder.end();
    }
    expect(settled.filter((r) => r.status === "rejected")).toEqual([]);
    for (const run of families.flat()) {
      expect((await a.getRun(run.id))?.state).toBe("COMPLETED");
      expect((await a.listTransitions(run.id)).map((t) => t.to)).toEqual(["PENDING", "RUNNING", "COMPLETED"]);
    }
  });

  it("renews the leases of a parent and a child while the child ends, without a deadlock", async () => {
    const [a, b] = (await pools(2)) as [PostgresBackend, PostgresBackend];
    // The child's row first: a renewal that does not sort would meet it first, in the array and
    // in the table alike.
    const child = await runningRun(a, { workerId: "w1", overrides: { id: "fam-b", parentRunId: "fam-a" } });
    const parent = await runningRun(a, { workerId: "w1", overrides: { id: "fam-a" } });
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    const lockWaits = async () =>
      (
        await db.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
      ).rows[0]?.n ?? 0;
    try {
      // The child's end waits for the parent (held here) before it locks anything; a renewal that
      // locked the child first and then waited for the parent would close a cycle with it.
      await holder.query("BEGIN");
      await holder.query(`SELECT id FROM ${pg.escapeIdentifier(schema)}.runs WHERE id = $1 FOR UPDATE`, [parent.id]);
      const end = endRun(a, child).then(
        () => "ended",
        (e: unknown) => e,
      );
      await until(async () => (await lockWaits()) >= 1);
      const renew = b
        .renewLeases({
          workerId: "w1",
          now: T0 + 10,
          leaseMs: LEASE_MS,
          runs: [
            { runId: child.id, epoch: child.epoch },
            { runId: parent.id, epoch: parent.epoch },
          ],
        })
        .catch((e: unknown) => e);
      await until(async () => (await lockWaits()) >= 2);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await holder.query("COMMIT");
      expect(await end).toBe("ended");
      expect(await renew).toEqual([child.id]);
    } finally {
      await holder.end();
    }
  });

  it("fires each due wait once when several workers fire at the same time", async () => {
    const backends = await pools(3);
    const first = backends[0] as PostgresBackend;
    const runs: RunRecord[] = [];
    for (let i = 0; i < 30; i++) {
      const { run } = await pausedRun(first, [{ seq: 1, kind: "timer", name: "sleep", dueAt: T0 + 500 + (i % 5) }], {
        pausedReason: "awaiting_timer",
      });
      runs.push(run);
    }
    const fired: WaitRecord[] = [];
    await Promise.all(
      backends.map(async (backend) => {
        for (;;) {
          const batch = await backend.fireDueWaits(T0 + 1_000, 4);
          if (batch.length === 0) return;
          fired.push(...batch);
        }
      }),
    );
    fired.push(...(await first.fireDueWaits(T0 + 1_000, 100)));
    expect(fired).toHaveLength(30);
    expect(new Set(fired.map((w) => w.runId))).toEqual(new Set(runs.map((r) => r.id)));
    for (const run of runs) {
      const transitions = await first.listTransitions(run.id);
      expect(transitions.map((t) => t.to)).toEqual(["PENDING", "RUNNING", "PAUSED", "RESUMING"]);
    }
    expect(await first.nextDueAt()).toBeNull();
  });

  it("never loses a child's end that races its parent's pause on it", async () => {
    const [a, b] = (await pools(2)) as [PostgresBackend, PostgresBackend];
    for (let i = 0; i < 10; i++) {
      const parent = await runningRun(a, { workerId: "w1" });
      const child = await runningRun(a, { workerId: "w2", overrides: { parentRunId: parent.id } });
      const wait = waitRecord(parent.id, 1, { kind: "child", name: child.id, details: { childRunId: child.id } });
      const [suspended] = await Promise.all([
        a.suspend(suspendRequest(parent, [wait], { pausedReason: "awaiting_child" })),
        endRun(b, child),
      ]);
      const [stored] = await a.loadWaits(parent.id);
      expect(stored).toMatchObject({ status: "resolved", resolution: { outcome: "child_ended" } });
      // Either the child had ended (not paused) or its end woke the paused parent.
      expect((await a.getRun(parent.id))?.state).toBe(suspended.paused ? "RESUMING" : "RUNNING");
    }
  });

  it("sends a stop wake-up to another process, and lets a worker find the request", async () => {
    const [a, b] = (await pools(2)) as [PostgresBackend, PostgresBackend];
    const heard: string[] = [];
    const unsubscribe = await a.subscribe((wake) =>
      heard.push("runId" in wake ? `${wake.kind}:${wake.runId}` : wake.kind),
    );
    try {
      const run = await runningRun(b, { workerId: "w7" });
      await b.requestStop({
        runId: run.id,
        request: { kind: "suspend", by: { kind: "user", id: "op" }, reason: "pause it", at: T0 + 10 },
        versions: VERSIONS,
      });
      await until(() => heard.includes(`stop:${run.id}`), { what: "stop wake-up" });
      expect(await a.listStopRequested("w7")).toEqual([run.id]);
      expect(await a.listStopRequested("w8")).toEqual([]);
    } finally {
      await unsubscribe();
    }
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

/** A local port with no listener. */
async function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}
