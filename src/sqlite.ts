/**
 * `cairn/sqlite`: the embedded SQLite backend (better-sqlite3, WAL).
 * @example
 * import { Runtime } from "cairn";
 * import { SqliteBackend } from "cairn/sqlite";
 * const runtime = new Runtime({ agents: [reportBuilder], backend: new SqliteBackend({ path: ".cairn/runs.db" }) });
 * @module cairn/sqlite
 */
export { SqliteBackend, type SqliteBackendOptions, type SqliteSynchronous } from "./backend/sqlite/sqlite-backend.ts";
