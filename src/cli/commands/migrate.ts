import type { Command } from "../command.ts";
import { chooseDatabase, POSTGRES_OPTIONS } from "../database.ts";

/**
 * `cairn migrate`: applies the pending PostgreSQL schema migrations (a deployment step, run as a
 * role that may create tables) and prints the schema version. Workers and `cairn run` also apply
 * them when they start; this is for doing it once, ahead of them.
 */
export const migrateCommand: Command = {
  name: "migrate",
  summary: "apply the PostgreSQL schema migrations and print the schema version",
  usage: "cairn migrate --database-url <url> [--schema <name>]",
  details: [
    "Creates the schema and its tables when missing. Safe to run again, and from several processes.",
    "SQLite databases need no migrate: they are set up when first opened.",
  ],
  positionals: [],
  options: { ...POSTGRES_OPTIONS },
  async run({ values }, io) {
    const database = chooseDatabase(values, process.env, { postgresOnly: true });
    const { from, to } = await database.migrate();
    io.out(
      from === to
        ? `${database.label}: schema version ${to}, up to date (nothing to apply)`
        : `${database.label}: migrated from schema version ${from} to ${to}`,
    );
    return 0;
  },
};
