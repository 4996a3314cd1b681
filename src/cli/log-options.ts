import { LOG_LEVELS, type Logger, type LogLevel } from "../core/logger.ts";
import { createConsoleLogger } from "../runtime/console-logger.ts";
import { usageError } from "./cli-error.ts";
import type { CommandArgs } from "./command.ts";
import type { Io } from "./format.ts";

/** The log options of the commands that execute runs (`run`, `resume`, `worker`). */
export const LOG_OPTIONS = {
  "log-format": { type: "string" },
  "log-level": { type: "string" },
} as const;

/** Their lines in `cairn help <command>`. */
export const LOG_DETAILS = [
  "--log-format json|pretty   the runtime's log lines on stderr: json = one JSON object per line, as",
  "           pino writes them (level, time, msg, runId, step, worker …); pretty = human lines (default)",
  "--log-level trace|debug|info|warn|error|fatal   the lowest level logged (default warn)",
];

/**
 * The runtime's logger for a command: its lines on stderr, in the format and from the level the
 * command line asks (`--log-format`, `--log-level`).
 */
export function cliLogger(values: CommandArgs["values"], io: Io): Logger {
  const format = values["log-format"] ?? "pretty";
  if (format !== "json" && format !== "pretty") {
    throw usageError(`--log-format must be json or pretty (got "${String(format)}")`);
  }
  const level = values["log-level"] ?? "warn";
  if (typeof level !== "string" || !Object.hasOwn(LOG_LEVELS, level)) {
    throw usageError(`--log-level must be one of ${Object.keys(LOG_LEVELS).join(", ")} (got "${String(level)}")`);
  }
  return createConsoleLogger({ format, level: level as LogLevel, write: (line) => io.err(line) });
}
