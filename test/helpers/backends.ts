import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe } from "vitest";
import type { AgentLike } from "../../src/agent/decorators.ts";
import type { RuntimeBackend } from "../../src/backend/backend.ts";
import { InMemoryBackend } from "../../src/backend/memory/memory-backend.ts";
import { PostgresBackend } from "../../src/backend/postgres/postgres-backend.ts";
import { SqliteBackend } from "../../src/backend/sqlite/sqlite-backend.ts";
import { silentLogger } from "../../src/core/logger.ts";
import { Runtime, type RuntimeOptions } from "../../src/runtime/runtime.ts";
import { TestRuntime, type TestRuntimeOptions } from "../../src/runtime/test-runtime.ts";
import type { WorkerOptions } from "../../src/worker/worker-options.ts";
import { startTestDatabase, type TestDatabase } from "./postgres.ts";

/**
 * Runs runtime-level tests against every backend: the same `describe` blocks are registered once
 * for `InMemoryBackend`, once for `SqliteBackend` (a file in the temp directory) and once for
 * `PostgresBackend` (schemas of one database per test file, made by {@link startTestDatabase}: on
 * the server at CAIRN_TEST_DATABASE_URL, or on an embedded one).
 *
 * @example
 * forEachBackend((under) => {
 *   const { runtimes } = under;
 *   describe("starting runs", () => {
 *     it("...", async () => {
 *       const rt = runtimes.make({ agents: [agent] }); // on a fresh store of this backend
 *       const shared = under.backend(); // two runtimes on one store, as across a restart
 *       ...
 *     });
 *   });
 * });
 *
 * Everything a test makes through `under` is shut down and closed after the test, runtimes first,
 * then backends: a SQLite file is deleted, a PostgreSQL schema emptied for a later test of the
 * file (the database, with its schemas, is dropped after the file). `CAIRN_TEST_BACKENDS=memory,sqlite`
 * runs only those.
 *
 * Tests that are about one backend, or about the in-memory one, stay outside `forEachBackend`.
 */

export type BackendName = "memory" | "sqlite" | "postgres";

export const BACKEND_NAMES: readonly BackendName[] = ["memory", "sqlite", "postgres"];

/** Options of {@link Runtimes.make}: a runtime's options, all optional but the agents. */
export type MakeOptions = Omit<RuntimeOptions, "agents"> & { agents: readonly AgentLike[] };

/** Runtimes made for one test, on its backend; shut down after it. */
export interface Runtimes {
  /**
   * A runtime with a silent logger, on `options.backend` or else a fresh store of the backend
   * under test, with the backend's {@link BackendUnderTest.worker} options under the test's own.
   */
  make(options: MakeOptions): Runtime;
  /** The same for a {@link TestRuntime} (a virtual clock). */
  makeTest(options: TestRuntimeOptions): TestRuntime;
  /** Adds a runtime made elsewhere to those shut down after the test. */
  track<R extends Runtime>(runtime: R): R;
  /** Shuts down every runtime made so far (also done after each test). */
  closeAll(): Promise<void>;
}

/** One backend under test, as a test sees it. */
export interface BackendUnderTest {
  readonly name: BackendName;
  /**
   * A new, empty store of this backend for the running test. Pass the same instance to several
   * runtimes to share the store (a client and a worker, or a runtime restarted on it). Its
   * `close()` does nothing: a runtime's shutdown would otherwise close it under the others (and the
   * test's own reads), as closing an `InMemoryBackend` never does; it is really closed, and its
   * file or schema deleted, after the test. `init()` is called by the runtimes as usual.
   */
  backend(): RuntimeBackend;
  /** Worker options that keep this backend prompt in tests; a test's own options win. */
  readonly worker: WorkerOptions;
  /** Runtimes on this backend, shut down after each test. */
  readonly runtimes: Runtimes;
  /** The PostgreSQL test database's URL (postgres only; call inside a test), for a test's own SQL. */
  databaseUrl(): string | undefined;
}

/** `CAIRN_TEST_BACKENDS` (comma-separated names), or all of them. */
function selectedBackends(): BackendName[] {
  const given = process.env.CAIRN_TEST_BACKENDS?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (!given || given.length === 0) return [...BACKEND_NAMES];
  const unknown = given.filter((n) => !BACKEND_NAMES.includes(n as BackendName));
  if (unknown.length > 0) {
    throw new Error(`CAIRN_TEST_BACKENDS names unknown backends ${unknown.join(", ")} (known: ${BACKEND_NAMES})`);
  }
  return BACKEND_NAMES.filter((n) => given.includes(n));
}

// One PostgreSQL database per test file, started before the first postgres block and dropped
// (with every schema in it) after the last one (a file may call forEachBackend more than once).
let database: Promise<TestDatabase> | undefined;
let postgresBlocks = 0;
let postgresBlocksDone = 0;
/**
 * Schemas of this file's database that a finished test emptied, for the next test to take: a new
 * schema costs its migrations (hundreds of milliseconds on a busy machine), emptying one a few
 * DELETEs. Each test still has schemas of its own, which no other test has rows in.
 */
const emptySchemas: string[] = [];
/**
 * The tables a test writes to, emptied between tests (`cairn_migrations` is kept), runs last for
 * the foreign keys. DELETE rather than TRUNCATE: on a server with fsync on, TRUNCATE's new files
 * cost about ten times as much for these few rows.
 */
const TABLES = ["transitions", "steps", "waits", "signals", "blobs", "runs"];

const sqliteRoot = join(tmpdir(), "cairn-runtime-tests");

/**
 * Registers `body`'s describe blocks once per backend, each inside `describe("on <backend>")`.
 * `options.only` restricts the backends (say why in the test file).
 */
export function forEachBackend(
  body: (backend: BackendUnderTest) => void,
  options: { only?: readonly BackendName[] } = {},
): void {
  for (const name of selectedBackends()) {
    if (options.only && !options.only.includes(name)) continue;
    describe(`on ${name}`, () => {
      const state = new TestState(name);
      if (name === "postgres") {
        postgresBlocks += 1;
        beforeAll(async () => {
          database ??= startTestDatabase();
          state.db = await database;
        });
        afterAll(async () => {
          postgresBlocksDone += 1;
          if (postgresBlocksDone === postgresBlocks && database) {
            const db = await database.catch(() => undefined);
            database = undefined;
            emptySchemas.length = 0;
            await db?.close();
          }
        });
      }
      afterEach(() => state.cleanup());
      body(state.view());
    });
  }
}

/** Per-block state: what the running test opened, and how to open more. */
class TestState {
  db: TestDatabase | undefined;
  readonly #runtimes: Runtime[] = [];
  /** Backends opened in the running test, with how to really close and delete each. */
  readonly #opened: (() => Promise<void>)[] = [];

  constructor(readonly name: BackendName) {}

  view(): BackendUnderTest {
    const worker = WORKER_OPTIONS[this.name];
    const withBackend = <O extends MakeOptions>(options: O): O => ({
      ...options,
      backend: options.backend ?? this.backend(),
      worker: options.worker === false ? false : { ...worker, ...options.worker },
    });
    const runtimes: Runtimes = {
      make: (options) => runtimes.track(new Runtime({ logger: silentLogger, ...withBackend(options) })),
      makeTest: (options) => runtimes.track(new TestRuntime(withBackend(options))),
      track: (runtime) => {
        this.#runtimes.push(runtime);
        return runtime;
      },
      closeAll: () => this.closeRuntimes(),
    };
    return { name: this.name, backend: () => this.backend(), worker, runtimes, databaseUrl: () => this.db?.url };
  }

  backend(): RuntimeBackend {
    switch (this.name) {
      case "memory":
        return new InMemoryBackend();
      case "sqlite": {
        const dir = join(sqliteRoot, randomUUID());
        const backend = new SqliteBackend({ path: join(dir, "cairn.db") });
        this.#opened.push(async () => {
          await backend.close();
          rmSync(dir, { recursive: true, force: true });
        });
        return held(backend);
      }
      case "postgres": {
        const db = this.db;
        if (!db) throw new Error("the PostgreSQL test database is not ready: call backend() inside a test");
        const schema = emptySchemas.pop() ?? db.schema("cairn_rt");
        const backend = new PostgresBackend({ connectionString: db.url, schema, max: 4 });
        this.#opened.push(async () => {
          await backend.close();
          const q = pg.escapeIdentifier(schema);
          try {
            await db.query(
              [...TABLES.map((t) => `DELETE FROM ${q}.${t}`), `ALTER SEQUENCE ${q}.signals_arrival_seq RESTART`].join(
                "; ",
              ),
            );
            emptySchemas.push(schema);
          } catch {
            // Never opened (no tables), or left in a state of its own: not used again.
            await db.dropSchema(schema);
          }
        });
        return held(backend);
      }
    }
  }

  async closeRuntimes(): Promise<void> {
    await Promise.all(this.#runtimes.splice(0).map((r) => r.shutdown({ graceMs: 0 })));
  }

  async cleanup(): Promise<void> {
    await this.closeRuntimes();
    const errors: unknown[] = [];
    for (const close of this.#opened.splice(0)) await close().catch((e: unknown) => errors.push(e));
    if (errors.length > 0) throw errors[0];
  }
}

/**
 * Per-backend worker options. None needed so far: no test waits on a poll. A worker polls every
 * 500 ms on memory and SQLite, but a runtime pokes its own worker, and the tests that hand a run
 * from one runtime to another set `pollIntervalMs` themselves or resume it explicitly;
 * PostgreSQL's LISTEN/NOTIFY wakes workers and waiters across runtimes (its poll, every 2 s, is a
 * fallback). What a test costs more on PostgreSQL is round trips (a trivial run takes tens of
 * milliseconds, a few hundred on a busy machine) and, without CAIRN_TEST_DATABASE_URL, the start
 * of the embedded server (a few seconds, once per file).
 */
const WORKER_OPTIONS: Record<BackendName, WorkerOptions> = {
  memory: {},
  sqlite: {},
  postgres: {},
};

/** `backend` with a `close()` that does nothing: the helper closes it after the test. */
function held<B extends RuntimeBackend>(backend: B): B {
  return intercept(backend, { close: async () => {} });
}

/**
 * `backend` with some methods replaced, for tests that inject a fault or a race into any backend
 * (a subclass would tie them to one backend class). The replacements call the original through
 * the backend they close over; every other member is the original, bound to it (so private fields
 * keep working).
 *
 * @example
 * const inner = under.backend();
 * const flaky = intercept(inner, {
 *   saveSteps: async (steps, options) => { if (fail) throw new StorageError("busy"); return inner.saveSteps(steps, options); },
 * });
 */
export function intercept<B extends RuntimeBackend>(backend: B, overrides: Partial<RuntimeBackend>): B {
  return new Proxy(backend, {
    get(target, property) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof RuntimeBackend];
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
