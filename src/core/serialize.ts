import { CairnError, NotSerializableError, type SerializedError } from "./errors.ts";
import type { Json } from "./records.ts";

/**
 * Checks that `value` survives a JSON round trip and returns the JSON form. Journal payloads
 * must be plain data, because a replay in another process sees only what was stored.
 */
export function toJson(value: unknown, what: string): Json | undefined {
  return jsonSnapshot(value, what).json;
}

/** Like {@link toJson}, also returning the JSON text (empty for `undefined`). */
export function jsonSnapshot(value: unknown, what: string): { json: Json | undefined; text: string } {
  if (value === undefined) return { json: undefined, text: "" };
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (cause) {
    throw new NotSerializableError(
      `${what} is not JSON (${(cause as Error).message}); return plain data (objects, arrays, strings, numbers, booleans, null)`,
      { cause },
    );
  }
  if (text === undefined) {
    throw new NotSerializableError(`${what} is not JSON (a ${typeof value}); return plain data`);
  }
  return { json: JSON.parse(text) as Json, text };
}

/** Turns any thrown value into the journal's error shape. */
export function serializeError(error: unknown, depth = 0): SerializedError {
  if (error instanceof Error) {
    const out: SerializedError = { name: error.name, message: error.message };
    if (error.stack) out.stack = error.stack;
    if (error instanceof CairnError) {
      out.code = error.code;
      out.retryable = error.retryable;
      const data: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(error)) {
        if (k !== "code" && typeof v !== "function") data[k] = v;
      }
      if (Object.keys(data).length) out.data = JSON.parse(JSON.stringify(data)) as Record<string, unknown>;
    } else {
      const code = (error as { code?: unknown }).code;
      if (typeof code === "string") out.code = code;
    }
    if (error.cause !== undefined && depth < 5) out.cause = serializeError(error.cause, depth + 1);
    return out;
  }
  return { name: "Error", message: typeof error === "string" ? error : safeString(error) };
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * An error rebuilt from the journal: same name, message, code and cause as the one first
 * thrown, so a replay re-throws what the live run threw.
 */
export class ReplayedError extends Error {
  readonly code: string | undefined;
  readonly data: Record<string, unknown> | undefined;
  constructor(serialized: SerializedError) {
    super(serialized.message, serialized.cause ? { cause: new ReplayedError(serialized.cause) } : undefined);
    this.name = serialized.name;
    this.code = serialized.code;
    this.data = serialized.data;
    if (serialized.stack) this.stack = serialized.stack;
  }
}

/** Rebuilds a thrown value from its journal form. */
export function deserializeError(serialized: SerializedError): Error {
  return new ReplayedError(serialized);
}
