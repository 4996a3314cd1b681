import type { ParseArgsConfig } from "node:util";
import type { Io } from "./format.ts";

/** The parsed command line of one command. */
export interface CommandArgs {
  /** The required positionals, in the order the command names them. */
  positionals: string[];
  values: { [option: string]: string | boolean | undefined };
}

/**
 * A `cairn` sub-command. Every command also takes `--help`; those that open a database list
 * `DATABASE_OPTIONS` (or `POSTGRES_OPTIONS`) from database.ts among their options.
 */
export interface Command {
  name: string;
  /** One line for the command list. */
  summary: string;
  /** The synopsis: `cairn run <module> <agent> <workflow> [--input <json>] …` */
  usage: string;
  /** Lines of detail shown by `cairn help <command>`. */
  details: string[];
  /** Names of the required positionals, e.g. ["runId"]. */
  positionals: string[];
  /** Whether the last positional takes one or more values (`cairn worker <module> [<module>…]`). */
  variadic?: boolean;
  options: NonNullable<ParseArgsConfig["options"]>;
  run(args: CommandArgs, io: Io): Promise<number>;
}
