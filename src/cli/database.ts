import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { ParseArgsConfig } from "node:util";
import type { RuntimeBackend } from "../backend/backend.ts";
import { PostgresBackend } from "../backend/postgres/postgres-backend.ts";
import { SqliteBackend } from "../backend/sqlite/sqlite-backend.ts";
import { InvalidDefinitionError, StorageError } from "../core/errors.ts";
import { CliError, usageError } from "./cli-error.ts";
import { displayPath } from "./format.ts";

/**
 * Where the CLI keeps runs: the one place that picks the backend. SQLite by default (`--db`,
 * `CAIRN_DB`, `.cairn/cairn.db`); PostgreSQL when a database URL is given (`--database-url`,
 * `CAIRN_DATABASE_URL`), in the schema `--schema` names.
 */

/** Where the CLI keeps runs when neither `--db` nor `CAIRN_DB` says otherwise. */
export const DEFAULT_DB = ".cairn/cairn.db";

/** The PostgreSQL schema when `--schema` is not given (the backend's default too). */
export const DEFAULT_SCHEMA = "cairn";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** The options of commands that work on SQLite or PostgreSQL. */
export const DATABASE_OPTIONS = {
  db: { type: "string" },
  "database-url": { type: "string" },
  schema: { type: "string" },
} as const satisfies Options;

/** The options of commands that only make sense on PostgreSQL (`cairn migrate`). */
export const POSTGRES_OPTIONS = {
  "database-url": { type: "string" },
  schema: { type: "string" },
} as const satisfies Options;

/** Help lines for whichever of the database options `options` has. */
export function databaseHelp(options: Options): string[] {
  const lines: string[] = [];
  if ("db" in options) lines.push(`--db <path>           SQLite database (default: $CAIRN_DB, else ${DEFAULT_DB})`);
  if ("database-url" in options) {
    lines.push("--database-url <url>  PostgreSQL: postgres://user:password@host:5432/database");
    lines.push("                      (default: $CAIRN_DATABASE_URL)");
  }
  if ("schema" in options)
    lines.push(`--schema <name>       PostgreSQL schema of the Cairn tables (default ${DEFAULT_SCHEMA})`);
  if ("db" in options && "database-url" in options) lines.push("--db and --database-url exclude each other.");
  return lines;
}

/** The database a command works on, chosen from its options and the environment. */
export interface Database {
  readonly kind: "sqlite" | "postgres";
  /** For messages: the SQLite path, or the PostgreSQL URL without its password and the schema. */
  readonly label: string;
  /**
   * The database options the user typed, to repeat in a suggested command (` --db x`), or "" when
   * the environment or the default chose. A password is never repeated.
   */
  readonly hint: string;
  /**
   * Makes the backend and opens it (`init()`), so that a database that cannot be used fails here,
   * with a message saying why. Without `create`, a database with no runs yet is an error rather
   * than something to create: a SQLite file is not made, PostgreSQL migrations are not applied.
   */
  open(options: { create: boolean }): Promise<RuntimeBackend>;
  /**
   * PostgreSQL only: applies the pending schema migrations (without opening the backend for
   * runs) and returns the version found and the version left.
   */
  migrate?(): Promise<{ from: number; to: number }>;
}

/** Option values as the parser gives them. */
type Values = { readonly [option: string]: string | boolean | undefined };

/**
 * Picks the database: `--db` and `--database-url` together are a usage error; either one beats
 * the environment; `CAIRN_DATABASE_URL` beats `CAIRN_DB`; else SQLite at `.cairn/cairn.db`.
 * With `postgresOnly` (`cairn migrate`), a database URL is required.
 */
export function chooseDatabase(values: Values, env?: NodeJS.ProcessEnv): Database;
export function chooseDatabase(
  values: Values,
  env: NodeJS.ProcessEnv | undefined,
  options: { postgresOnly: true },
): Database & Required<Pick<Database, "migrate">>;
export function chooseDatabase(
  values: Values,
  env: NodeJS.ProcessEnv = process.env,
  options: { postgresOnly?: boolean } = {},
): Database {
  const dbFlag = stringValue(values.db);
  const urlFlag = stringValue(values["database-url"]);
  const schemaFlag = stringValue(values.schema);
  if (dbFlag !== undefined && urlFlag !== undefined) {
    throw usageError(
      "--db and --database-url both given; pick one: --db <path> for SQLite or --database-url <url> for PostgreSQL",
    );
  }
  const envUrl = env.CAIRN_DATABASE_URL || undefined;
  const url = urlFlag ?? (dbFlag === undefined ? envUrl : undefined);
  if (url === undefined) {
    if (options.postgresOnly) {
      throw usageError(
        "no PostgreSQL database given: pass --database-url postgres://user:password@host:5432/database or set CAIRN_DATABASE_URL",
      );
    }
    if (schemaFlag !== undefined) {
      throw usageError("--schema is for PostgreSQL; give --database-url <url> (or CAIRN_DATABASE_URL) with it");
    }
    return sqlite(resolve(dbFlag ?? (env.CAIRN_DB || DEFAULT_DB)), dbFlag);
  }
  return postgres(url, urlFlag === undefined ? "CAIRN_DATABASE_URL" : "--database-url", schemaFlag);
}

function stringValue(value: string | boolean | undefined): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function sqlite(path: string, flag: string | undefined): Database {
  return {
    kind: "sqlite",
    label: displayPath(path),
    hint: flag === undefined ? "" : ` --db ${flag}`,
    async open({ create }) {
      if (!create && !existsSync(path)) {
        throw new CliError(
          `no database at ${path}; start a run first (cairn run …) or point to the database with --db <path> or CAIRN_DB`,
        );
      }
      const backend = new SqliteBackend({ path });
      await backend.init();
      return backend;
    },
  };
}

function postgres(
  url: string,
  source: "--database-url" | "CAIRN_DATABASE_URL",
  schemaFlag: string | undefined,
): Database & Required<Pick<Database, "migrate">> {
  if (!/^postgres(ql)?:\/\//i.test(url)) {
    throw usageError(
      `${source} "${redact(url)}" is not a PostgreSQL URL; it looks like postgres://user:password@host:5432/database`,
    );
  }
  const schema = schemaFlag ?? DEFAULT_SCHEMA;
  const shown = redact(url);
  const hasPassword = shown !== url;
  const hint = [
    source === "--database-url" ? ` --database-url ${hasPassword ? "<url>" : url}` : "",
    schemaFlag === undefined ? "" : ` --schema ${schemaFlag}`,
  ].join("");
  const make = (migrate: boolean): PostgresBackend => {
    try {
      return new PostgresBackend({ connectionString: url, schema, migrate });
    } catch (error) {
      if (error instanceof InvalidDefinitionError) {
        throw usageError(`--schema "${schema}" is not a usable PostgreSQL schema name (1 to 63 bytes, no NUL)`);
      }
      throw error;
    }
  };
  make(true); // the schema name is checked before anything connects
  return {
    kind: "postgres",
    label: `${shown} (schema ${schema})`,
    hint,
    async open({ create }) {
      const backend = make(create);
      try {
        await backend.init();
      } catch (error) {
        // Without `create` the backend only checks the schema; its advice names backend options,
        // the command line's is `cairn migrate`.
        if (!create && error instanceof StorageError && /migrate: false/.test(error.message)) {
          const what = error.message.replace(/ and the backend was started with migrate: false;.*$/s, "");
          throw new CliError(
            `${what}; apply the migrations with \`cairn migrate${hint}\` (\`cairn run\` and \`cairn worker\` apply them too), or check --schema`,
            { cause: error },
          );
        }
        throw error;
      }
      return backend;
    },
    migrate: () => make(true).migrate(),
  };
}

/** `url` without its password (`postgres://user@host/db`), for messages. */
export function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.password) return url;
    parsed.password = "";
    return parsed.toString().replace(/^([a-z]+:\/\/[^@/]*):@/i, "$1@");
  } catch {
    return url.replace(/^([a-z]+:\/\/[^:@/]*):[^@/]*@/i, "$1@");
  }
}
