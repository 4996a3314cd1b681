import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startTestDatabase, type TestDatabase } from "../../../test/helpers/postgres.ts";
import type { AcceptanceRecord, RunRecord, StepRecord } from "../../core/records.ts";
import {
  effectRecord,
  fullStep,
  LEASE_MS,
  move,
  runUsage,
  T0,
  USER,
  VERSIONS,
} from "../conformance/conformance-fixtures.ts";
import { PostgresBackend } from "./postgres-backend.ts";
import { MIGRATIONS, SCHEMA_VERSION } from "./postgres-migrations.ts";
import { statements } from "./postgres-statements.ts";

/**
 * Migration 3 (effects, run usage and acceptance, RECONCILING claimable) on a schema at version 2,
 * migration 4 (the global transition feed) on a schema at version 3, and migration 5 (the step
 * journal) under both: step rows written before it still load, later writes go over them.
 */

let db: TestDatabase;

beforeAll(async () => {
  db = await startTestDatabase();
});

afterAll(async () => {
  await db?.close();
});

/**
 * A new schema at `version`, as a released Cairn left it (its migrations applied and recorded),
 * added to `schemas` to be dropped; with its quoted name.
 */
async function schemaAt(version: number, schemas: string[]): Promise<{ schema: string; q: string }> {
  const schema = db.schema();
  schemas.push(schema);
  const q = pg.escapeIdentifier(schema);
  await db.query(`CREATE SCHEMA ${q}`);
  await db.query(
    `CREATE TABLE ${q}.cairn_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
  );
  for (const migration of MIGRATIONS.filter((m) => m.version <= version)) {
    await db.query(migration.sql(q));
    await db.query(`INSERT INTO ${q}.cairn_migrations (version, name) VALUES ($1, $2)`, [
      migration.version,
      migration.name,
    ]);
  }
  return { schema, q };
}

/** The `runs` columns of version 2, in its table order. */
const V2_RUN_COLUMNS =
  "id, agent, workflow, run_key, state, paused_reason, input, output, error, epoch, lease_owner, lease_expires_at, " +
  "recoveries, last_transition_id, versions, meta, created_at, updated_at, parent_run_id, parent_close_policy, " +
  "stop_request, continued_from, continued_to";

describe("PostgresBackend migration 3", () => {
  const opened: PostgresBackend[] = [];
  const schemas: string[] = [];

  afterEach(async () => {
    for (const backend of opened.splice(0)) await backend.close();
    for (const schema of schemas.splice(0)) await db.dropSchema(schema);
  });

  /** A schema at version 2, as a released Cairn left it, holding a RUNNING run with a step and a RECONCILING run. */
  async function versionTwo(): Promise<string> {
    const { schema, q } = await schemaAt(2, schemas);
    const versions = JSON.stringify(VERSIONS);
    const params = Array.from({ length: 23 }, (_, i) => `$${i + 1}`).join(", ");
    const row = (id: string, state: string, epoch: number, owner: string | null) => [
      id,
      "report_builder",
      "build",
      null,
      state,
      null,
      '{"b":1,"a":2}',
      null,
      null,
      epoch,
      owner,
      owner ? T0 + LEASE_MS : null,
      0,
      2,
      versions,
      "{}",
      T0,
      T0 + 1,
      null,
      null,
      null,
      null,
      null,
    ];
    await db.query(`INSERT INTO ${q}.runs (${V2_RUN_COLUMNS}) VALUES (${params})`, row("old-1", "RUNNING", 1, "w1"));
    await db.query(
      `INSERT INTO ${q}.runs (${V2_RUN_COLUMNS}) VALUES (${params})`,
      row("old-2", "RECONCILING", 1, null),
    );
    await db.query(
      `INSERT INTO ${q}.steps (run_id, seq, kind, name, status, args_digest, args, result, error, attempts, heartbeat,
         usage, started_at, ended_at, epoch)
       VALUES ('old-1', 1, 'tool', 't', 'completed', 'd', '{}', '{"z":0,"y":[1]}', NULL, '[]', NULL, NULL, $1, $1, 1)`,
      [T0],
    );
    return schema;
  }

  it("adds the columns, takes RECONCILING runs from the claim index, and keeps the data", async () => {
    const schema = await versionTwo();
    expect(SCHEMA_VERSION).toBe(9);
    const backend = new PostgresBackend({ connectionString: db.url, schema, migrate: false });
    opened.push(backend);
    const refused = await backend.init().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(refused?.message).toContain("is at Cairn schema version 2, this version of Cairn needs 9");
    expect(await backend.migrate()).toEqual({ from: 2, to: 9 });
    await backend.init();

    const q = pg.escapeIdentifier(schema);
    const applied = await db.query(`SELECT version FROM ${q}.cairn_migrations ORDER BY version`);
    expect(applied.rows.map((r) => r.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Migration 8 replaced runs_runnable with runs_claim_order, on the same runnable states.
    const index = await db.query<{ indexdef: string }>(
      "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'runs_claim_order'",
      [schema],
    );
    expect(index.rows[0]?.indexdef).toContain("RECONCILING");
    // Migration 6: the open child waits the sweep reads.
    const sweep = await db.query<{ indexdef: string }>(
      "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'waits_open_child'",
      [schema],
    );
    expect(sweep.rows[0]?.indexdef).toMatch(
      /\(name\) WHERE \(\(status = 'open'::text\) AND \(kind = 'child'::text\)\)/,
    );

    const old = (await backend.getRun("old-1")) as RunRecord;
    expect(old).toMatchObject({ state: "RUNNING", epoch: 1, leaseOwner: "w1" });
    expect(old.usage).toBeUndefined();
    expect(old.acceptance).toBeUndefined();
    expect(JSON.stringify(old.input)).toBe('{"b":1,"a":2}');
    const [step] = await backend.loadSteps("old-1");
    expect(step && "effect" in step).toBe(false);
    expect(JSON.stringify(step?.result)).toBe('{"z":0,"y":[1]}');

    // The run version 2 could not hand out is claimed now.
    const claimed = await backend.claimRun({ workerId: "w2", now: T0 + 10, leaseMs: LEASE_MS });
    expect(claimed).toMatchObject({ id: "old-2", state: "RECONCILING", leaseOwner: "w2", epoch: 2 });

    // The new columns take values.
    const withEffect: StepRecord = { ...fullStep("old-1", 2, 1), effect: effectRecord(2) };
    await backend.saveSteps([withEffect], { epoch: 1, sync: true });
    expect((await backend.loadSteps("old-1"))[1]).toStrictEqual(withEffect);
    // Migration 5: later writes go to the journal, over the rows written before it. A step of the
    // old table written again comes back as the journal has it, each seq once.
    const rewritten: StepRecord = { ...fullStep("old-1", 1, 1), result: { again: true } };
    await backend.saveSteps([rewritten], { epoch: 1, sync: true });
    expect(await backend.loadSteps("old-1")).toStrictEqual([rewritten, withEffect]);
    const journal = await db.query(`SELECT count(*)::integer AS n FROM ${q}.journal WHERE run_id = 'old-1'`);
    expect(journal.rows[0]?.n).toBe(2);
    const kept = await db.query(`SELECT count(*)::integer AS n FROM ${q}.steps WHERE run_id = 'old-1'`);
    expect(kept.rows[0]?.n).toBe(1);
    const usage = runUsage(2);
    const { run: done } = await backend.transition(
      move(old, "RUNNING", "COMPLETED", { patch: { output: { ok: 1 }, usage, releaseLease: true } }),
    );
    expect(done.usage).toStrictEqual(usage);
    const verdict: AcceptanceRecord = { decision: "accepted", by: USER, note: "ok", at: T0 + 5_000 };
    expect(await backend.recordAcceptance("old-1", verdict)).toStrictEqual({ ...done, acceptance: verdict });
    expect(await backend.getRun("old-1")).toStrictEqual({ ...done, acceptance: verdict });
  });

  it("answers the claim from the rebuilt partial index", async () => {
    const schema = await versionTwo();
    const backend = new PostgresBackend({ connectionString: db.url, schema });
    opened.push(backend);
    await backend.init();
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    try {
      const client = await pool.connect();
      try {
        // Planned as on a large table: a predicate the index does not imply shows as a sequential scan.
        await client.query("SET enable_seqscan = off");
        const plan = (await client.query(`EXPLAIN ${statements(schema).claimNext.text}`, [T0, null])).rows
          .map((r) => r["QUERY PLAN"])
          .join("\n");
        expect(plan).toContain("runs_claim_order");
      } finally {
        client.release();
      }
    } finally {
      await pool.end();
    }
  });
});

describe("PostgresBackend migration 4", () => {
  const opened: PostgresBackend[] = [];
  const schemas: string[] = [];

  afterEach(async () => {
    for (const backend of opened.splice(0)) await backend.close();
    for (const schema of schemas.splice(0)) await db.dropSchema(schema);
  });

  it("puts the transitions there are first in the feed, run by run; later ones follow, and older writers are not skipped", async () => {
    const { schema, q } = await schemaAt(3, schemas);
    // Two PENDING runs as version 3 wrote them, "old-b" first.
    const columns = "run_id, id, at, actor_kind, actor_id, from_state, to_state, paused_reason, reason, versions";
    for (const id of ["old-b", "old-a"]) {
      await db.query(
        `INSERT INTO ${q}.runs (id, agent, workflow, state, input, epoch, recoveries, last_transition_id, versions, meta,
           created_at, updated_at)
         VALUES ($1, $2, 'build', 'PENDING', '{}', 0, 0, 1, $3, '{}', $4, $4)`,
        [id, `agent-${id}`, JSON.stringify(VERSIONS), T0],
      );
      await db.query(
        `INSERT INTO ${q}.transitions (${columns}) VALUES ($1, 1, $2, 'user', 'alice', NULL, 'PENDING', NULL, 'started', $3)`,
        [id, T0, JSON.stringify(VERSIONS)],
      );
    }

    const backend = new PostgresBackend({ connectionString: db.url, schema, migrate: false });
    opened.push(backend);
    const refused = await backend.init().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(refused?.message).toContain("is at Cairn schema version 3, this version of Cairn needs 9");
    expect(await backend.migrate()).toEqual({ from: 3, to: 9 });
    await backend.init();

    const first = await backend.listTransitionsSince({ after: null, limit: 10 });
    expect(first.transitions.map((e) => [e.transition.runId, e.transition.id, e.agent])).toEqual([
      ["old-a", 1, "agent-old-a"],
      ["old-b", 1, "agent-old-b"],
    ]);
    expect(first.transitions[0]?.transition).toMatchObject({ from: null, to: "PENDING", actor: USER, at: T0 });
    expect(await backend.latestTransitionCursor()).toBe(first.cursor);

    // A transition written by this version, then one by a process of version 3 (no feed_key: the
    // column's default, its transaction's id), both after the old ones.
    const claimed = (await backend.claimRun({
      workerId: "w1",
      now: T0,
      leaseMs: LEASE_MS,
      runId: "old-a",
    })) as RunRecord;
    const moved = await backend.transition(move(claimed, "PENDING", "RUNNING"));
    await db.query(
      `INSERT INTO ${q}.transitions (${columns}) VALUES ('old-b', 2, $1, 'user', 'alice', 'PENDING', 'CANCELLED', NULL, 'old', $2)`,
      [T0 + 5, JSON.stringify(VERSIONS)],
    );
    const later: string[] = [];
    let cursor = first.cursor;
    const deadline = Date.now() + 10_000;
    while (later.length < 2 && Date.now() < deadline) {
      const page = await backend.listTransitionsSince({ after: cursor, limit: 10 });
      later.push(...page.transitions.map((e) => `${e.transition.runId}#${e.transition.id}`));
      cursor = page.cursor;
      if (later.length < 2) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(later).toEqual([`old-a#${moved.transition.id}`, "old-b#2"]);
  });
});
