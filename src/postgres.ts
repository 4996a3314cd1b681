/**
 * `cairn/postgres`: the PostgreSQL backend (the `pg` driver): many workers on many machines share
 * one database. `pg` is an optional peer dependency: `npm install pg` beside cairn.
 * @example
 * import { Runtime } from "cairn";
 * import { PostgresBackend } from "cairn/postgres";
 * const backend = new PostgresBackend({ connectionString: process.env.DATABASE_URL, schema: "cairn" });
 * const runtime = new Runtime({ agents: [reportBuilder], backend });
 * @module cairn/postgres
 */
import { pgDriver } from "./backend/postgres/pg-driver.ts";

// `pg` is an optional peer dependency: without it, importing this entry fails here with a
// MissingPeerDependencyError that says `npm install pg`.
pgDriver();

export { PostgresBackend, type PostgresBackendOptions } from "./backend/postgres/postgres-backend.ts";
