import { LOG_LEVELS, type LogFields, type LogFn, type Logger, type LogLevel } from "../core/logger.ts";

/** Options of {@link createConsoleLogger}. */
export interface ConsoleLoggerOptions {
  /** Lines below this level are dropped. @default "warn" */
  level?: LogLevel;
  /**
   * `json`: one JSON object per line, as pino writes them (`level` as pino's number, `time`,
   * `msg`, then the bindings and fields); `pretty`: `14:03:07.412 WARN  message  runId=… step=3`.
   * @default "pretty"
   */
  format?: "json" | "pretty";
  /** Where each line goes (without its newline). @default process.stderr */
  write?: (line: string) => void;
  /** The clock of each line's time. @default Date.now */
  now?: () => number;
}

/**
 * A {@link Logger} that writes to the console (stderr by default): the logger for when pino is
 * not wanted. The runtime cleans its lines of credentials before they get here.
 *
 * @example
 * const runtime = new Runtime({ agents: [support], logger: createConsoleLogger({ level: "info", format: "json" }) });
 */
export function createConsoleLogger(options: ConsoleLoggerOptions = {}): Logger {
  const threshold = LOG_LEVELS[options.level ?? "warn"];
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const now = options.now ?? Date.now;
  const format = options.format === "json" ? jsonLine : prettyLine;
  const make = (bindings: LogFields): Logger => {
    const at =
      (level: LogLevel): LogFn =>
      (first: LogFields | string, message?: string) => {
        if (LOG_LEVELS[level] < threshold) return;
        const [fields, msg] = typeof first === "string" ? [{}, first] : [first, message ?? ""];
        write(format(level, now(), msg, { ...bindings, ...fields }));
      };
    const logger: Logger = {
      trace: at("trace"),
      debug: at("debug"),
      info: at("info"),
      warn: at("warn"),
      error: at("error"),
      fatal: at("fatal"),
      child: (more) => make({ ...bindings, ...more }),
    };
    // As pino has it: the runtime skips cleaning a line this logger would drop.
    return Object.assign(logger, { isLevelEnabled: (level: LogLevel) => LOG_LEVELS[level] >= threshold });
  };
  return make({});
}

/** Warnings and errors to stderr, as human lines; nothing else. The default logger. */
export const consoleLogger: Logger = createConsoleLogger();

function jsonLine(level: LogLevel, time: number, msg: string, fields: LogFields): string {
  return safeJson({ level: LOG_LEVELS[level], time, ...fields, msg });
}

function prettyLine(level: LogLevel, time: number, msg: string, fields: LogFields): string {
  const pairs = Object.entries(fields).map(([key, value]) => `${key}=${pairValue(value)}`);
  return [`${clockOf(time)} ${level.toUpperCase().padEnd(5)} ${msg}`, ...pairs].join("  ");
}

function pairValue(value: unknown): string {
  if (typeof value === "string") return /[\s"=]/.test(value) || value === "" ? JSON.stringify(value) : value;
  return safeJson(value);
}

/** JSON text of `value`; a value JSON cannot hold (a cycle, a bigint) as its String. */
function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? String(v) : v)) ?? String(value);
  } catch {
    return String(value);
  }
}

function clockOf(at: number): string {
  return new Date(at).toISOString().slice(11, 23);
}
