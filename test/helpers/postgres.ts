import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { startEmbedded } from "./embedded-postgres.ts";

/**
 * A PostgreSQL database for one test file. With `CAIRN_TEST_DATABASE_URL` set (CI, a local
 * server) it connects there; otherwise on the embedded server the run shares
 * (test/global-postgres.ts), or, outside such a run, on an embedded PostgreSQL of its own (the
 * `embedded-postgres` package) on a free port with its data in the system temp directory. Either way it creates a
 * fresh database `cairn_test_<random>` and drops it in {@link TestDatabase.close}, so test files
 * running at the same time never see each other's rows.
 */
export interface TestDatabase {
  /** Connection string of the fresh database. */
  readonly url: string;
  /** Connection string of the same server with the password left out, for messages. */
  readonly server: string;
  /** Whether the server was started by this harness (false: `CAIRN_TEST_DATABASE_URL`). */
  readonly embedded: boolean;
  /** A schema name nobody has used yet in this database: one per backend under test. */
  schema(prefix?: string): string;
  /** Runs SQL in the test database as the admin user. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
  /** Drops a schema and everything in it; a missing schema is fine. */
  dropSchema(schema: string): Promise<void>;
  /** Drops the database and stops the embedded server (removing its files). */
  close(): Promise<void>;
}

/** The variable that points the tests at an existing server. */
export const TEST_DATABASE_URL_VARIABLE = "CAIRN_TEST_DATABASE_URL";

/** Starts or connects to the server and creates the test database. */
export async function startTestDatabase(): Promise<TestDatabase> {
  const given = process.env[TEST_DATABASE_URL_VARIABLE];
  const shared = given ? undefined : sharedEmbeddedUrl();
  const existing = given ?? shared;
  const server = existing !== undefined ? { url: existing, stop: async () => {} } : await startEmbedded();
  const name = `cairn_test_${randomBytes(6).toString("hex")}`;
  try {
    await withClient(server.url, (c) => c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`));
  } catch (error) {
    await server.stop();
    throw error;
  }
  const url = withDatabase(server.url, name);
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  admin.on("error", () => {});
  let schemas = 0;
  return {
    url,
    server: redact(server.url),
    embedded: given === undefined,
    schema: (prefix = "cairn_t") => {
      schemas += 1;
      return `${prefix}_${schemas}_${randomBytes(3).toString("hex")}`;
    },
    query: (text, values) => admin.query(text, values),
    dropSchema: async (schema) => {
      await admin.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`);
    },
    close: async () => {
      try {
        await admin.end();
        await withClient(server.url, async (c) => {
          const version = Number((await c.query("SHOW server_version_num")).rows[0]?.server_version_num);
          const force = version >= 130000 ? " WITH (FORCE)" : "";
          await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)}${force}`);
        });
      } finally {
        await server.stop();
      }
    },
  };
}

/**
 * The embedded server test/global-postgres.ts started for the whole run, when it did (no
 * `CAIRN_TEST_DATABASE_URL`, and a selected test file needs PostgreSQL); undefined otherwise, and
 * outside a vitest worker, where the caller then starts its own.
 */
function sharedEmbeddedUrl(): string | undefined {
  try {
    return inject("cairnSharedPostgresUrl") || undefined;
  } catch {
    return undefined;
  }
}

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** `url` pointing at database `name`. */
export function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

function redact(url: string): string {
  const parsed = new URL(url);
  parsed.password = "";
  return parsed.toString();
}

/**
 * Hands every query made on the connections `pool` opens to `hook`, with its SQL text and what
 * the driver returned for it (a promise, for the promise form); the hook's value is returned in
 * its place. For tests that watch what a backend sends, or act at a chosen statement.
 */
export function hookQueries(pool: pg.Pool, hook: (text: string, result: unknown) => unknown): void {
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      const first = args[0] as string | { text?: string } | undefined;
      return hook((typeof first === "string" ? first : first?.text) ?? "", query(...args));
    };
  });
}
