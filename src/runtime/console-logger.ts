import type { Logger } from "../core/logger.ts";

/** Warnings and errors to stderr; nothing else. The default logger. */
export const consoleLogger: Logger = {
  debug() {},
  info() {},
  warn: (message, fields) => console.warn(`[cairn] ${message}`, fields ?? ""),
  error: (message, fields) => console.error(`[cairn] ${message}`, fields ?? ""),
};
