/**
 * Where the runtime writes its log lines (a port: the console logger is in `runtime/`). The shape
 * is pino's, so a pino logger is passed as it is (`new Runtime({ logger: pino() })`): each level is
 * a method called as `logger.info(fields, message)` (or `logger.info(message)`), and
 * `child(bindings)` returns a logger whose every line carries `bindings`. The runtime binds
 * `worker` (its worker id), `runId` and `step` (the step's number) this way, so every line it logs
 * about a run says which run, step and worker it is about. Bunyan, and `createConsoleLogger` from
 * `cairn`, fit too.
 */

/** The levels, lowest first, with pino's numbers. */
export const LOG_LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;

/** A level's name. */
export type LogLevel = keyof typeof LOG_LEVELS;

/** Fields of a log line (pino's "merging object"). */
export type LogFields = Record<string, unknown>;

/** One level's method: `(fields, message)` or `(message)`, as pino takes them. */
export interface LogFn {
  (fields: LogFields, message?: string): void;
  (message: string): void;
}

/**
 * A logger the runtime writes to: pino's interface (pino and bunyan loggers satisfy it), see the
 * file's comment. Lines are cleaned of credentials before they reach it (see `toLogger`).
 */
export interface Logger {
  trace: LogFn;
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  fatal: LogFn;
  /** A logger whose every line carries `bindings` as fields, besides its own. */
  child(bindings: LogFields): Logger;
}

/**
 * The logger of Cairn before 0.x: four methods called as `(message, fields)`, without `child`.
 * Still accepted wherever a {@link Logger} is (the runtime adapts it, see `toLogger`): the
 * bindings of child loggers arrive merged into `fields`; `trace` lines are dropped, `fatal`
 * ones go to `error`.
 * @deprecated Pass a {@link Logger} (pino, or `createConsoleLogger`).
 */
export interface LegacyLogger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const discard = (): void => {};

/** Discards everything. */
export const silentLogger: Logger = {
  trace: discard,
  debug: discard,
  info: discard,
  warn: discard,
  error: discard,
  fatal: discard,
  child: () => silentLogger,
};

/** Whether `logger` has pino's shape (a `child` method), not the legacy one. */
export function isLogger(logger: Logger | LegacyLogger): logger is Logger {
  return typeof (logger as Partial<Logger>).child === "function";
}

/**
 * `logger` as a {@link Logger}: one of the legacy shape ({@link LegacyLogger}) adapted, the bindings
 * of its children merged into each line's fields. The silent logger comes back as it is.
 */
export function adaptLegacyLogger(logger: Logger | LegacyLogger): Logger {
  return isLogger(logger) ? logger : legacyAdapter(logger, {});
}

function legacyAdapter(legacy: LegacyLogger, bindings: LogFields): Logger {
  const at =
    (level: keyof LegacyLogger): LogFn =>
    (first: LogFields | string, message?: string) => {
      if (typeof first === "string") legacy[level](first, Object.keys(bindings).length ? { ...bindings } : undefined);
      else legacy[level](message ?? "", { ...bindings, ...first });
    };
  return {
    trace: discard,
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    fatal: at("error"),
    child: (more) => legacyAdapter(legacy, { ...bindings, ...more }),
  };
}
