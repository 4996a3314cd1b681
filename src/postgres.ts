/**
 * `cairn/postgres`: the PostgreSQL backend (the `pg` driver): many workers on many machines share
 * one database.
 * @example
 * import { Runtime } from "cairn";
 * import { PostgresBackend } from "cairn/postgres";
 * const backend = new PostgresBackend({ connectionString: process.env.DATABASE_URL, schema: "cairn" });
 * const runtime = new Runtime({ agents: [reportBuilder], backend });
 */
export { PostgresBackend, type PostgresBackendOptions } from "./backend/postgres/postgres-backend.ts";
