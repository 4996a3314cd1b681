import { execFileSync } from "node:child_process";
import { createServer } from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hookQueries, startTestDatabase, type TestDatabase, withDatabase } from "../../../test/helpers/postgres.ts";
import { backendsPerTest } from "../../../test/helpers/postgres-backends-per-test.ts";
import { InvalidDefinitionError, StorageError } from "../../core/errors.ts";
import { LEASE_MS, runInput, T0 } from "../conformance/conformance-fixtures.ts";
import { PostgresBackend } from "./postgres-backend.ts";
import { wakeChannel } from "./postgres-listener.ts";

/** How the backend connects (`postgres-connection.ts`), and what it says when it cannot. */

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

describe("PostgresBackend", () => {
  const { make, open, initError, roles } = backendsPerTest(() => db);

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
