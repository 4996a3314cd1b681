import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { SqliteBackend } from "../sqlite.ts";
import { CliError } from "./cli-error.ts";

/** Where the CLI keeps runs when neither `--db` nor `CAIRN_DB` says otherwise. */
export const DEFAULT_DB = ".cairn/cairn.db";

/** The database path: `--db`, else `CAIRN_DB`, else `.cairn/cairn.db`, relative to the current directory. */
export function dbPath(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(flag ?? (env.CAIRN_DB || DEFAULT_DB));
}

/**
 * Opens the SQLite database. Commands that only read (`runs`, `show`, `resume`) refuse a path
 * with no database rather than creating an empty one there.
 */
export function openDatabase(path: string, options: { create: boolean }): SqliteBackend {
  if (!options.create && !existsSync(path)) {
    throw new CliError(
      `no database at ${path}; start a run first (cairn run …) or point to the database with --db <path> or CAIRN_DB`,
    );
  }
  return new SqliteBackend({ path });
}
