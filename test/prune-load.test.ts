import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RuntimeBackend } from "../src/backend/backend.ts";
import { PostgresBackend } from "../src/backend/postgres/postgres-backend.ts";
import { SqliteBackend } from "../src/backend/sqlite/sqlite-backend.ts";
import { silentLogger } from "../src/core/logger.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { startTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { untilState } from "./helpers/runtime-helpers.ts";
import { busyAgent, ENDED_PREFIX, importEnded, OWNED_TABLES, startBusy } from "./prune/prune-load-fixtures.ts";

/**
 * The prune at scale (issue 24, item 4): 10,000 ended runs, each with rows in every table a run
 * owns, pruned in batches of 500 while a worker runs other runs on the same store. Every row of
 * the ended runs goes, the blobs only they referred to too; the paused run is untouched, and the
 * runs the worker executes during the prune all complete.
 */
const ENDED = 10_000;
const dir = mkdtempSync(join(tmpdir(), "cairn-prune-load-"));
let db: TestDatabase | undefined;
beforeAll(async () => {
  db = await startTestDatabase();
}, 60_000);
afterAll(async () => {
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A store under test: the backend, and how to count rows behind its back. */
interface Store {
  backend: RuntimeBackend;
  /** Rows of the ended runs per table, and every blob. */
  counts(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

async function sqliteStore(): Promise<Store> {
  const path = join(dir, "runs.db");
  const backend = new SqliteBackend({ path, durability: "process" });
  await backend.init();
  await importEnded(backend, 0, ENDED, 50);
  const file = new Database(path, { readonly: true });
  const count = (sql: string) => (file.prepare(sql).pluck().get() as number) ?? 0;
  return {
    backend,
    async counts() {
      const counts: Record<string, number> = {};
      for (const table of OWNED_TABLES.sqlite) {
        const column = table === "runs" ? "id" : "run_id";
        counts[table] = count(`SELECT count(*) FROM ${table} WHERE ${column} LIKE '${ENDED_PREFIX}%'`);
      }
      counts.blobs = count("SELECT count(*) FROM blobs");
      return counts;
    },
    async close() {
      file.close();
      await backend.close();
    },
  };
}

/**
 * PostgreSQL: 300 runs imported (50 with a blob of their own, ten sharing one), a row in the old `steps` table added
 * to the last, and 9,700 copies of it made in SQL, each with its own rows in every table.
 */
async function postgresStore(): Promise<Store> {
  const database = db as TestDatabase;
  const schema = database.schema("prune_load");
  const backend = new PostgresBackend({ connectionString: database.url, schema });
  await backend.init();
  await importEnded(backend, 0, 300, 50, 4);
  const s = pg.escapeIdentifier(schema);
  const template = `${ENDED_PREFIX}00299`;
  await database.query(
    `INSERT INTO ${s}.steps (run_id, seq, kind, name, status, args_digest, attempts, started_at, epoch)
     VALUES ($1, 9, 'tool', 'legacy', 'completed', 'd', '[]', 0, 1)`,
    [template],
  );
  for (const table of OWNED_TABLES.postgres) {
    const column = table === "runs" ? "id" : "run_id";
    await database.query(
      `INSERT INTO ${s}.${table} ${table === "journal" ? "OVERRIDING SYSTEM VALUE" : ""}
       SELECT (jsonb_populate_record(t, jsonb_build_object('${column}', '${ENDED_PREFIX}' || lpad(g::text, 5, '0')))).*
       FROM ${s}.${table} AS t, generate_series(300, ${ENDED - 1}) AS g WHERE t.${column} = $1`,
      [template],
    );
  }
  return {
    backend,
    async counts() {
      const counts: Record<string, number> = {};
      for (const table of OWNED_TABLES.postgres) {
        const column = table === "runs" ? "id" : "run_id";
        const { rows } = await database.query<{ n: string }>(
          `SELECT count(*) AS n FROM ${s}.${table} WHERE ${column} LIKE '${ENDED_PREFIX}%'`,
        );
        counts[table] = Number(rows[0]?.n);
      }
      const { rows } = await database.query<{ n: string }>(`SELECT count(*) AS n FROM ${s}.blobs`);
      counts.blobs = Number(rows[0]?.n);
      return counts;
    },
    async close() {
      await backend.close();
      await database.dropSchema(schema);
    },
  };
}

describe.each([
  ["SQLite", sqliteStore],
  ["PostgreSQL", postgresStore],
] as const)("pruning 10,000 ended runs on %s while a worker runs", (_name, open) => {
  it("deletes every row of the ended runs in batches; open runs untouched, running ones complete", async () => {
    const started = Date.now();
    const store = await open();
    const made = Date.now();
    const runtime = new Runtime({ agents: [busyAgent], backend: store.backend, logger: silentLogger });
    try {
      await runtime.start();
      const before = await store.counts();
      expect(before.runs).toBe(ENDED);
      expect(before.transitions).toBe(4 * ENDED);
      expect(before.blobs).toBe(51);
      for (const [table, rows] of Object.entries(before)) expect(rows, table).toBeGreaterThan(0);
      const held = await runtime.run(busyAgent, "hold", {});
      await untilState(store.backend, held.id, "PAUSED");
      const heldBefore = await runtime.history(held.id);
      const busy = await startBusy(runtime, 20, 10);

      const pruning = runtime.prune({ olderThan: "1h", batchSize: 500 });
      busy.push(...(await startBusy(runtime, 10, 5)));
      const result = await pruning;
      const pruned = Date.now();

      expect(result.pruned).toBe(ENDED);
      expect(result.batches).toBeGreaterThanOrEqual(ENDED / 500);
      expect(new Set(result.runIds).size).toBe(ENDED);
      expect(result.runIds.every((id) => id.startsWith(ENDED_PREFIX))).toBe(true);
      for (const id of busy) expect((await runtime.waitFor(id, { timeoutMs: 60_000 })).state).toBe("COMPLETED");
      const after = await store.counts();
      expect(after).toStrictEqual(Object.fromEntries(Object.keys(before).map((table) => [table, 0])));
      expect(await runtime.history(held.id)).toStrictEqual(heldBefore);
      expect((await runtime.listRuns({ limit: 1000 })).length).toBe(busy.length + 1);
      console.log(
        `${_name}: ${ENDED} ended runs made in ${made - started} ms, pruned in ${result.batches} batches in ${pruned - made} ms`,
      );
    } finally {
      await runtime.shutdown({ graceMs: 0 });
      await store.close();
    }
  }, 240_000);
});
