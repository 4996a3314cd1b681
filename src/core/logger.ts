/** Where the runtime writes its log lines (a port: the console logger is in `runtime/`). */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Discards everything. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
