import { afterAll, afterEach, beforeAll } from "vitest";
import { PostgresBackend } from "../../src/backend/postgres/postgres-backend.ts";
import { startTestDatabase, type TestDatabase } from "./postgres.ts";

/** What {@link backendPerTest} gives a test file. */
export interface BackendPerTest {
  /** The file's database (started before its tests, closed after them). */
  readonly db: TestDatabase;
  /** The backend the running test opened. */
  readonly backend: PostgresBackend;
  /** A backend on a schema of its own, initialised; closed and its schema dropped after the test. */
  open(): Promise<PostgresBackend>;
}

/**
 * Registers, for the calling test file, a database for all its tests and a backend per test
 * (`open()`): the setup of the PostgreSQL backend's test files that check one backend at a time.
 */
export function backendPerTest(): BackendPerTest {
  let db: TestDatabase | undefined;
  let backend: PostgresBackend | undefined;
  beforeAll(async () => {
    db = await startTestDatabase();
  });
  afterAll(async () => {
    await db?.close();
  });
  afterEach(async () => {
    if (!backend) return;
    await backend.close();
    await db?.dropSchema(backend.schema);
    backend = undefined;
  });
  const started = (): TestDatabase => {
    if (!db) throw new Error("the test database is started before the file's tests: use it inside a test");
    return db;
  };
  return {
    get db() {
      return started();
    },
    get backend() {
      if (!backend) throw new Error("no backend is open: call open() first");
      return backend;
    },
    async open() {
      backend = new PostgresBackend({ connectionString: started().url, schema: started().schema() });
      await backend.init();
      return backend;
    },
  };
}
