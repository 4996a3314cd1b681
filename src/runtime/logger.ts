/** Where the runtime writes its log lines. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Warnings and errors to stderr; nothing else. The default logger. */
export const consoleLogger: Logger = {
  debug() {},
  info() {},
  warn: (message, fields) => console.warn(`[cairn] ${message}`, fields ?? ""),
  error: (message, fields) => console.error(`[cairn] ${message}`, fields ?? ""),
};

/** Discards everything. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
