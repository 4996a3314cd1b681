import type pg from "pg";
import { CairnError, StorageError, StorageRejectedError } from "../../core/errors.ts";

/** Where a backend connects, for messages: never carries the password. */
export interface PostgresTarget {
  /** `postgres://user@host:port/database`, without the password. */
  url: string;
  user: string | undefined;
  database: string | undefined;
  schema: string;
}

/**
 * Turns what pg or the network threw into a {@link StorageError} whose message names the server,
 * the database and the schema and, where the cause is known, what to do about it. Cairn errors (a
 * refused transition, a lost lease, a schema check) pass through unchanged.
 */
export function toStorageError(error: unknown, target: PostgresTarget, operation: string): Error {
  if (error instanceof CairnError) return error;
  const code = errorCode(error);
  const detail = describe(error);
  const hint = code === undefined ? undefined : hintFor(code, target);
  if (code !== undefined && isRejection(code)) {
    const field = (error as { column?: unknown }).column;
    return new StorageRejectedError(
      `PostgreSQL refused a value on ${operation}: ${detail} (${code})${typeof field === "string" ? ` in column "${field}"` : ""}; writing it again would fail the same way`,
      typeof field === "string" ? { field } : {},
      { cause: error },
    );
  }
  return new StorageError(
    `PostgreSQL ${operation} on ${target.url} (schema "${target.schema}") failed: ${detail}${code ? ` (${code})` : ""}${hint ? `; ${hint}` : ""}`,
    { cause: error },
  );
}

/**
 * SQLSTATEs that say the data itself was refused, so the same write fails again: class 22 (data
 * exception: a NUL in text, an escape JSON cannot take, a value out of range), 23 (integrity
 * constraint) and 54 (program limit exceeded: a value too large or too deep to index or parse).
 */
export function isRejection(code: string): boolean {
  return /^(22|23|54)[0-9A-Z]{3}$/.test(code);
}

/** The SQLSTATE of a server error, or the Node error code of a network error. */
function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string") return code;
  // An AggregateError (every address of a host refused) carries the code on its members.
  const inner = (error as { errors?: unknown } | null)?.errors;
  if (Array.isArray(inner)) return errorCode(inner[0]);
  return undefined;
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.message) return error.message;
  const inner = (error as { errors?: unknown }).errors;
  if (Array.isArray(inner) && inner[0] instanceof Error) return inner[0].message;
  return error.name;
}

function hintFor(code: string, t: PostgresTarget): string | undefined {
  const fixed = HINTS[code];
  if (fixed) return typeof fixed === "string" ? fixed : fixed(t);
  // Class 08 (connection exception) and 57P0x (the server is going down or starting).
  if (code.startsWith("08") || code.startsWith("57P")) {
    return "the connection to the server was lost or refused; check that PostgreSQL is running and reachable, then retry";
  }
  return undefined;
}

const UNREACHABLE = (t: PostgresTarget) =>
  `no PostgreSQL server answered at ${t.url}; check the host and port in the connection string and that the server is running and accepts TCP connections`;

/** What to do about the errors a user can fix, by SQLSTATE or Node error code. */
const HINTS: Readonly<Record<string, string | ((t: PostgresTarget) => string)>> = {
  ECONNREFUSED: UNREACHABLE,
  ECONNRESET: "the server closed the connection; check that PostgreSQL is running, then retry",
  ETIMEDOUT: UNREACHABLE,
  EHOSTUNREACH: UNREACHABLE,
  ENOTFOUND: (t) => `the host in ${t.url} does not resolve; check the host name in the connection string`,
  EAI_AGAIN: (t) => `the host in ${t.url} could not be resolved right now; check DNS and the host name`,
  "28P01": (t) =>
    `authentication failed for user "${t.user ?? "?"}"; check the user and password in the connection string (or PGUSER / PGPASSWORD)`,
  "28000": (t) =>
    `the server refused user "${t.user ?? "?"}" (pg_hba.conf has no entry that admits it, or the role cannot log in); check the user in the connection string and the server's pg_hba.conf`,
  "3D000": (t) =>
    `create the database (CREATE DATABASE ${t.database ?? "name"}) or fix its name in the connection string`,
  "42501": (t) =>
    `grant the role CREATE on the database (to create schema "${t.schema}") or USAGE and CREATE on that schema, or have its owner apply the migrations and start with migrate: false`,
  "3F000": (t) =>
    `schema "${t.schema}" does not exist; start with migrate: true (the default) to create it, or check the schema option`,
  "42P01": (t) =>
    `a Cairn table is missing from schema "${t.schema}"; apply the migrations (migrate: true) or check the schema option`,
  "53300":
    "the server has no connection slots left; lower the max option of this and other pools, or raise max_connections",
  "53100": "the database server's disk is full; free space and retry",
  "40001": "a serialization failure; retry",
  "40P01": "a deadlock was detected and this transaction was chosen to fail; retry",
  "57014": "the statement was cancelled (statement_timeout or an operator); retry, or raise statement_timeout",
  "25P03":
    "the connection sat idle inside a transaction longer than transactionIdleTimeoutMs (a frozen or stalled process) and the server ended it; the transaction was rolled back",
  "25006": "the database is read-only (a standby or default_transaction_read_only); connect to the primary",
  DEPTH_ZERO_SELF_SIGNED_CERT:
    "the server's TLS certificate is self-signed; pass a CA (ssl option of a pool) or use sslmode=no-verify in the connection string",
  SELF_SIGNED_CERT_IN_CHAIN:
    "the server's TLS certificate chain is self-signed; pass a CA (ssl option of a pool) or use sslmode=no-verify in the connection string",
};

/**
 * Whether the connection that raised `error` must not be reused. A refusal by Cairn's rules or a
 * server error (a five-character SQLSTATE) leaves it usable, except connection exceptions (class
 * 08), a server going down (57P) and a session the server ended for sitting idle in a transaction
 * (25P03); anything else (a socket error, a timeout) may not.
 */
export function isConnectionError(error: unknown): boolean {
  if (error instanceof CairnError) return false;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code))
    return code.startsWith("08") || code.startsWith("57P") || code === "25P03";
  return true;
}

/** Where `options` connect, for messages, without the password. */
export function describeTarget(options: { connectionString?: string; pool?: pg.Pool }, schema: string): PostgresTarget {
  const pool = options.pool as (pg.Pool & { options?: pg.PoolConfig }) | undefined;
  const config: pg.ClientConfig = pool?.options ?? {};
  let user = config.user ?? process.env.PGUSER;
  let database = config.database ?? process.env.PGDATABASE;
  let host = config.host ?? process.env.PGHOST ?? "localhost";
  let port = String(config.port ?? process.env.PGPORT ?? 5432);
  const connectionString = options.connectionString ?? config.connectionString;
  if (connectionString !== undefined) {
    try {
      const url = new URL(connectionString);
      user = url.username ? decodeURIComponent(url.username) : user;
      database = url.pathname.length > 1 ? decodeURIComponent(url.pathname.slice(1)) : database;
      host = url.hostname || host;
      port = url.port || port;
    } catch {
      // Not a URL (a libpq keyword string): the defaults above stand.
    }
  }
  return {
    url: `postgres://${user === undefined ? "" : `${user}@`}${host}:${port}/${database ?? user ?? ""}`,
    user,
    database: database ?? user,
    schema,
  };
}

/**
 * An error that must reach the caller as it was thrown (a planner's refusal, the error a
 * `resolveWait` decision threw), not be reworded as a storage failure.
 */
export class PassThrough {
  constructor(readonly error: unknown) {}
}
