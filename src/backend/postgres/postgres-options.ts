import type pg from "pg";
import { InvalidDefinitionError } from "../../core/errors.ts";

/** Options of `PostgresBackend`. Give `connectionString` or `pool`, not both. */
export interface PostgresBackendOptions {
  /**
   * Where to connect: `postgres://user:password@host:5432/database` (libpq-style parameters such
   * as `?sslmode=require` work too). With neither this nor `pool`, pg's defaults apply: the
   * `PGHOST`, `PGPORT`, `PGDATABASE`, `PGUSER` and `PGPASSWORD` environment variables.
   * @default undefined
   */
  connectionString?: string;
  /**
   * A pool the application already has. The backend borrows it: `close()` does not end it, and
   * `max`, `connectTimeoutMs` and `applicationName` do not apply, nor the TCP keepalive the
   * backend's own pool turns on (give the pool `keepAlive: true` to have it). Its type parsers
   * are left alone (the backend passes its own with every query).
   * @default undefined (the backend makes and owns its pool)
   */
  pool?: pg.Pool;
  /**
   * The PostgreSQL schema that holds Cairn's tables, so that several applications (or test runs)
   * can share one database. Created by the migrations when missing.
   * @default "cairn"
   */
  schema?: string;
  /**
   * Whether `init()` applies pending schema migrations (under an advisory lock, so processes that
   * start together apply each one once). With `false`, `init()` only checks the schema and refuses
   * to start, with a `StorageError` that says what to do, when it is missing, older or newer than
   * this version of Cairn: for deployments where a privileged role runs migrations and workers
   * connect as a role that may not create tables.
   * @default true
   */
  migrate?: boolean;
  /**
   * What a committed checkpoint survives. `"machine"`: a crash of the database server or its
   * machine. Run creation, claims, transitions and every step write that carries a result wait
   * for the WAL flush, at PostgreSQL's own `synchronous_commit` setting (`on` unless the server,
   * database or role says otherwise; a `remote_apply` chosen for replicas is kept). Start records
   * (`saveSteps` with `sync: false`) and lease renewals commit with `synchronous_commit = off`;
   * the next synchronous commit covers them.
   *
   * `"process"`: a crash of any Cairn process, not of the database server. Every step write
   * commits with `synchronous_commit = off`, so a server crash can lose the last moments of
   * results (at most about 3 × `wal_writer_delay`, 600 ms by default) and those tools run again.
   * Run creation, claims and transitions stay synchronous in both modes: they move the lease
   * epoch, and an epoch that went backwards in a server crash could be handed to two workers,
   * who outlive the server on other machines. So do pauses, waits, signals and stop requests: an
   * answer or a signal that was acknowledged must not be lost.
   * @default "machine"
   */
  durability?: "process" | "machine";
  /**
   * Most connections the backend's pool opens. A worker needs about one per run it writes at the
   * same moment; many worker processes multiply this against the server's `max_connections`.
   * @default 10
   */
  max?: number;
  /**
   * How long opening a connection, or waiting for a free one in the pool, may take before the
   * call fails with a `StorageError`.
   * @default 10000
   */
  connectTimeoutMs?: number;
  /**
   * `application_name` of the connections, as `pg_stat_activity` shows it.
   * @default "cairn"
   */
  applicationName?: string;
  /**
   * Longest a transaction of this backend may sit idle between two of its statements before the
   * server ends the connection and rolls it back (`idle_in_transaction_session_timeout`, set for
   * each of its transactions, so a borrowed `pool` gets it too). Cairn's transactions (claims,
   * transitions, waits, signals, stops, migrations) lock the rows of their runs and never wait on
   * anything but the server between statements, so an idle gap of seconds means the process is
   * frozen (SIGSTOP, a stalled VM, a pause of the event loop): without this bound, the rows it
   * locked would stay locked until it woke up, and no other worker could take over its runs when
   * their leases lapse. `0` turns the bound off (the server's own setting applies).
   * @default 10000
   */
  transactionIdleTimeoutMs?: number;
  /**
   * Bytes of JSON text above which a step's arguments or result are stored out of line: once per
   * content in the `blobs` table (keyed by sha-256), with a small reference in the step's row,
   * written by the same statement. `loadSteps` returns the full values.
   * @default 262144 (256 KiB)
   */
  inlineLimitBytes?: number;
}

/** The options checked, with their defaults: a bad one throws an `InvalidDefinitionError` that names it. */
export function checkOptions(options: PostgresBackendOptions): { schema: string; transactionIdleTimeoutMs: number } {
  const schema = options.schema ?? "cairn";
  if (schema === "" || Buffer.byteLength(schema) > 63 || schema.includes("\u0000")) {
    throw new InvalidDefinitionError(
      `PostgresBackend schema "${schema}" is not a usable PostgreSQL name; use 1 to 63 bytes without NUL`,
    );
  }
  if (options.pool && options.connectionString !== undefined) {
    throw new InvalidDefinitionError("PostgresBackend takes connectionString or pool, not both");
  }
  if (options.max !== undefined && !(Number.isInteger(options.max) && options.max >= 1)) {
    throw new InvalidDefinitionError(`PostgresBackend max must be a whole number of at least 1, got ${options.max}`);
  }
  const idleMs = options.transactionIdleTimeoutMs ?? 10_000;
  if (!(Number.isInteger(idleMs) && idleMs >= 0 && idleMs <= 2 ** 31 - 1)) {
    throw new InvalidDefinitionError(
      `PostgresBackend transactionIdleTimeoutMs must be a whole number of milliseconds from 0 (off) to 2147483647, got ${idleMs}`,
    );
  }
  return { schema, transactionIdleTimeoutMs: idleMs };
}
