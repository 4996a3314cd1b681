import type pg from "pg";
import { StorageError } from "../../core/errors.ts";
import { pgDriver } from "./pg-driver.ts";
import { isConnectionError, PassThrough, type PostgresTarget, toStorageError } from "./postgres-errors.ts";
import type { PostgresBackendOptions } from "./postgres-options.ts";
import { type Sql, TYPES } from "./postgres-sql.ts";

/** A pool, or one of its connections checked out. */
export type Queryable = pg.Pool | pg.PoolClient;

/**
 * How `PostgresBackend` talks to the server: the pool of the open backend, prepared statements
 * with its type parsers, a connection checked out and given back (or closed when it may be
 * broken), transactions, and what fails turned into `StorageError`s that name the server and the
 * fix.
 */
export class PostgresConnection {
  readonly #target: PostgresTarget;
  /** What opens each transaction: BEGIN, with the idle bound of `transactionIdleTimeoutMs`. */
  readonly begin: string;
  /** Connections whose transaction could not be rolled back: closed, never reused. */
  readonly #doomed = new WeakSet<pg.PoolClient>();
  /** The pool of the open backend: set by `init()`, cleared by `close()`. */
  pool: pg.Pool | undefined;

  constructor(target: PostgresTarget, transactionIdleTimeoutMs: number) {
    this.#target = target;
    this.begin = beginStatement(transactionIdleTimeoutMs);
  }

  /** The pool of the open backend; a `StorageError` before `init()` and after `close()`. */
  ready(): pg.Pool {
    if (!this.pool) {
      throw new StorageError(
        `PostgresBackend for ${this.#target.url} (schema "${this.#target.schema}") is not open; call init() first (and not after close())`,
      );
    }
    return this.pool;
  }

  /** Runs `statement` (prepared by name) on `on`; its rows. */
  query<R = unknown>(on: Queryable, statement: Sql, values: unknown[]): Promise<R[]> {
    return on
      .query<pg.QueryResultRow>({ name: statement.name, text: statement.text, values, types: TYPES })
      .then((result) => result.rows as R[]);
  }

  /** Runs `work`; what it throws comes out as a `StorageError` naming `operation` and the server. */
  async call<T>(operation: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw toStorageError(error, this.#target, operation);
    }
  }

  /** Runs `work` on a connection checked out of `pool`, closed afterwards if it may be broken. */
  async withClient<T>(operation: string, work: (client: pg.PoolClient) => Promise<T>, pool: pg.Pool): Promise<T> {
    let client: pg.PoolClient | undefined;
    let discard = false;
    // pg-pool listens for 'error' only on idle connections. A connection the server drops while it
    // is checked out (a restart's "terminating connection due to administrator command" arriving
    // between two statements, or right behind the reply that handed the connection over, in the
    // same packet) emits 'error' with nobody listening, which would end the process. Heard here
    // instead: the statement in flight, or the next one, fails, and the connection is closed
    // rather than reused. The listener is added in the pool's callback, in the same tick as the
    // hand-over; a promise would leave a gap for an error already in the socket's buffer.
    let lost = false;
    const onLost = () => {
      lost = true;
    };
    try {
      client = await new Promise<pg.PoolClient>((resolve, reject) =>
        pool.connect((error, connected) => {
          if (error || !connected) return reject(error);
          connected.on("error", onLost);
          resolve(connected);
        }),
      );
      return await work(client);
    } catch (error) {
      if (error instanceof PassThrough) throw error.error;
      discard = client !== undefined && (lost || this.#doomed.has(client) || isConnectionError(error));
      throw toStorageError(error, this.#target, operation);
    } finally {
      client?.removeListener("error", onLost);
      // release(true) closes the connection instead of handing it to the next caller.
      client?.release(discard || lost);
    }
  }

  /**
   * Runs `work` in BEGIN … COMMIT on one connection; any error rolls back. A connection whose
   * rollback failed, or that failed at the network level, is closed rather than returned to the
   * pool in an unknown state.
   */
  transaction<T>(pool: pg.Pool, operation: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.withClient(
      operation,
      async (client) => {
        await client.query(this.begin);
        let result: T;
        try {
          result = await work(client);
        } catch (error) {
          await client.query("ROLLBACK").catch(() => this.#doomed.add(client));
          throw error;
        }
        await client.query("COMMIT");
        return result;
      },
      pool,
    );
  }
}

/** Idle time before a connection's first keepalive probe. */
const KEEPALIVE_IDLE_MS = 10_000;

/** The pool a backend makes for itself from its options. */
export function makePool(options: PostgresBackendOptions): pg.Pool {
  const pool = new (pgDriver().Pool)({
    ...(options.connectionString === undefined ? {} : { connectionString: options.connectionString }),
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    application_name: options.applicationName ?? "cairn",
    // TCP keepalive, as libpq has by default: a server that vanished without a word (a network
    // partition, a host that lost power) is noticed on an idle connection — the LISTEN connection,
    // one waiting for a reply — instead of never. The listener's connection takes the pool's options.
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
  });
  // An idle connection that the server drops (a restart, an idle timeout) is reported here and
  // removed from the pool; the next query opens a new one. Without a listener, pg's 'error'
  // event would end the process.
  pool.on("error", () => {});
  return pool;
}

/**
 * BEGIN, and the bound on idle gaps for this transaction only (SET LOCAL), sent together as one
 * simple-protocol query: one round trip, as BEGIN alone.
 */
function beginStatement(idleMs: number): string {
  return idleMs === 0 ? "BEGIN" : `BEGIN; SET LOCAL idle_in_transaction_session_timeout = ${idleMs}`;
}
