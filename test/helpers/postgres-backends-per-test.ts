import pg from "pg";
import { afterEach, expect } from "vitest";
import { StorageError } from "../../src/core/errors.ts";
import { PostgresBackend, type PostgresBackendOptions } from "../../src/postgres.ts";
import type { TestDatabase } from "./postgres.ts";

/** What {@link backendsPerTest} gives the tests of a describe block. */
export interface BackendsPerTest {
  /** A backend on a schema of its own (unless `options.schema` names one), not opened yet. */
  make(options?: PostgresBackendOptions): PostgresBackend;
  /** {@link BackendsPerTest.make}, then `init()`. */
  open(options?: PostgresBackendOptions): Promise<PostgresBackend>;
  /** The `StorageError` the backend's `init()` fails with (the test fails when it succeeds). */
  initError(backend: PostgresBackend): Promise<Error>;
  /** Schemas dropped after each test: the backends', and any a test adds that it made itself. */
  readonly schemas: Set<string>;
  /** Roles a test created on the server: dropped after it, with what they own. */
  readonly roles: string[];
}

/**
 * Registers, for the calling describe block, backends made and opened as its tests need them
 * (several per test, with options), closed after each test, with their schemas and the roles a
 * test created dropped: the setup of the PostgreSQL backend's test files that check one role of it.
 * `db` gives the file's database.
 */
export function backendsPerTest(db: () => TestDatabase): BackendsPerTest {
  const opened: PostgresBackend[] = [];
  const schemas = new Set<string>();
  const roles: string[] = [];

  function make(options: PostgresBackendOptions = {}): PostgresBackend {
    const backend = new PostgresBackend({
      ...(options.pool ? {} : { connectionString: db().url }),
      ...options,
      schema: options.schema ?? db().schema(),
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
    for (const schema of schemas) await db().dropSchema(schema);
    schemas.clear();
    for (const role of roles.splice(0)) {
      // Roles belong to the server, not the test database: never leave one behind.
      await db()
        .query(`DROP OWNED BY ${pg.escapeIdentifier(role)}`)
        .catch(() => undefined);
      await db().query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(role)}`);
    }
  });

  return { make, open, initError, schemas, roles };
}
