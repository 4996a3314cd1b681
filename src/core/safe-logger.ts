import {
  adaptLegacyLogger,
  type LegacyLogger,
  type LogFields,
  type LogFn,
  type Logger,
  type LogLevel,
  silentLogger,
} from "./logger.ts";
import type { Json } from "./records.ts";
import { redactJson, redactText } from "./redact.ts";

/**
 * What the runtime logs through: the user's logger ({@link Logger}, or a {@link LegacyLogger}
 * adapted) behind a layer that keeps credentials out of every line: the message and every string
 * in the fields and bindings pass through `redactText` (DESIGN §6, "Secrets"), the string value of
 * a field named like a credential (`apiKey`, `authorization`, `password` …) is replaced whole, and
 * an `Error` becomes `{ type, message, code, stack }`, cleaned the same way.
 */
export function toLogger(logger: Logger | LegacyLogger): Logger {
  const inner = adaptLegacyLogger(logger);
  if (inner === silentLogger) return inner;
  return (inner as { [SAFE]?: true })[SAFE] ? inner : safe(inner);
}

const SAFE = Symbol("cairn.safeLogger");

const LEVELS: readonly LogLevel[] = ["trace", "debug", "info", "warn", "error", "fatal"];

function safe(inner: Logger): Logger {
  // pino's: a line of a level it drops is not cleaned for nothing.
  const enabled = (inner as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled?.bind(inner);
  const out = { [SAFE]: true, child: (bindings: LogFields) => safe(inner.child(cleanFields(bindings))) } as Logger & {
    [SAFE]: true;
  };
  for (const level of LEVELS) {
    out[level] = ((first: LogFields | string, message?: string) => {
      if (enabled && !enabled(level)) return;
      if (typeof first === "string") inner[level](redactText(first));
      else inner[level](cleanFields(first), message === undefined ? undefined : redactText(message));
    }) as LogFn;
  }
  return out;
}

/** `fields` with credentials redacted and errors made plain (see {@link toLogger}). */
export function cleanFields(fields: LogFields): LogFields {
  const plain: LogFields = {};
  for (const [key, value] of Object.entries(fields)) plain[key] = value instanceof Error ? plainError(value) : value;
  try {
    return redactJson(plain as Json) as LogFields;
  } catch (error) {
    // A cycle (too deep to walk): the line is still written, without its fields.
    return { fieldsDropped: redactText(String(error)) };
  }
}

function plainError(error: Error): Json {
  const code = (error as { code?: unknown }).code;
  return {
    type: error.name,
    message: redactText(error.message),
    ...(typeof code === "string" && { code }),
    ...(error.stack !== undefined && { stack: redactText(error.stack) }),
  };
}
