import { reviveCairnError } from "./error-revival.ts";
import { CairnError, NotSerializableError, PayloadTooLargeError, type SerializedError } from "./errors.ts";
import type { Json } from "./records.ts";
import { redactJson, redactText } from "./redact.ts";
import { storableText } from "./text.ts";

/** The default limit on one JSON payload of the journal: 16 MiB of JSON text (UTF-8). */
export const DEFAULT_MAX_PAYLOAD_BYTES = 16 * 1024 * 1024;

/**
 * Checks that `value` survives a JSON round trip and returns the JSON form. Journal payloads
 * must be plain data, because a replay in another process sees only what was stored. With
 * `maxBytes`, JSON text longer than that many bytes (UTF-8) is refused with
 * {@link PayloadTooLargeError}; `what` names the value in the error ("the result of tool …").
 */
export function toJson(value: unknown, what: string, maxBytes?: number): Json | undefined {
  return jsonSnapshot(value, what, maxBytes).json;
}

/** Like {@link toJson}, also returning the JSON text (empty for `undefined`). */
export function jsonSnapshot(
  value: unknown,
  what: string,
  maxBytes?: number,
): { json: Json | undefined; text: string } {
  if (value === undefined) return { json: undefined, text: "" };
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (cause) {
    if (cause instanceof RangeError) throw tooDeep(what, cause);
    throw new NotSerializableError(
      `${what} is not JSON (${(cause as Error).message}); pass plain data (objects, arrays, strings, numbers, booleans, null)`,
      { cause },
    );
  }
  if (text === undefined) {
    throw new NotSerializableError(`${what} is not JSON (a ${typeof value}); pass plain data`);
  }
  if (maxBytes !== undefined) checkPayloadSize(text, what, maxBytes);
  // JSON.stringify writes NaN and ±Infinity as null: a value that would not read back as it was.
  if (text.includes("null")) checkFinite(value, what);
  if (text.length > MAX_JSON_DEPTH * 2 && jsonDepth(text) > MAX_JSON_DEPTH) throw tooDeep(what);
  return { json: JSON.parse(text) as Json, text };
}

/**
 * How deeply arrays and objects may nest in a payload. Every store parses JSON it is given, and
 * each parser has a depth limit of its own (SQLite's JSON functions: 1,000; PostgreSQL's stack
 * limit, a few thousand): one limit for all, far above what data needs, keeps them equal.
 */
export const MAX_JSON_DEPTH = 512;

function tooDeep(what: string, cause?: unknown): NotSerializableError {
  return new NotSerializableError(
    `${what} nests arrays or objects more than ${MAX_JSON_DEPTH} levels deep; flatten it or pass a reference to it`,
    cause === undefined ? {} : { cause },
  );
}

/** The deepest nesting of arrays and objects in JSON `text`. */
function jsonDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // a backslash escapes the next character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > deepest) deepest = depth;
    } else if (c === 125 || c === 93) depth--;
  }
  return deepest;
}

/** Throws when `value` holds a number JSON cannot carry (NaN, Infinity), naming where. */
function checkFinite(value: unknown, what: string): void {
  JSON.stringify(value, function (this: unknown, key: string, v: unknown) {
    if (typeof v === "number" && !Number.isFinite(v)) {
      throw new NotSerializableError(
        `${what} holds ${String(v)}${key === "" ? "" : ` at key ${JSON.stringify(key)}`}, which JSON cannot carry (it would be stored as null); pass a finite number, a string, or null`,
      );
    }
    return v;
  });
}

/** The UTF-8 length of `text` when it is over `limit`, else undefined. */
function bytesOver(text: string, limit: number): number | undefined {
  // A UTF-16 code unit takes 1 to 3 bytes of UTF-8, so nearly every text needs no count at all.
  if (text.length * 3 <= limit) return undefined;
  const bytes = Buffer.byteLength(text, "utf8");
  return bytes > limit ? bytes : undefined;
}

/** Throws {@link PayloadTooLargeError} when `text` (JSON) is longer than `limit` bytes. */
export function checkPayloadSize(text: string, what: string, limit: number): void {
  const bytes = bytesOver(text, limit);
  if (bytes === undefined) return;
  throw new PayloadTooLargeError(
    `${what} is ${formatBytes(bytes)} of JSON, over the limit of ${formatBytes(limit)} (maxPayloadBytes); store the data elsewhere (a file, an object store, a table of your own) and pass a reference to it, or raise the runtime's maxPayloadBytes`,
    { bytes, limit },
  );
}

/** `1536` → `1.5 KiB (1536 bytes)`. */
export function formatBytes(bytes: number): string {
  const units = ["KiB", "MiB", "GiB"];
  let value = bytes;
  let unit = "";
  for (const next of units) {
    if (value < 1024) break;
    value /= 1024;
    unit = next;
  }
  if (unit === "") return `${bytes} bytes`;
  const shown = value >= 100 ? Math.round(value).toString() : value.toFixed(1).replace(/\.0$/, "");
  return `${shown} ${unit} (${bytes} bytes)`;
}

/**
 * Turns any thrown value into the journal's error shape, with credentials redacted from its
 * message, stack and data ({@link redactText}): every error Cairn stores or logs goes through here.
 */
export function serializeError(error: unknown, depth = 0): SerializedError {
  if (error instanceof Error) {
    const out: SerializedError = { name: error.name, message: redactText(String(error.message)) };
    if (error.stack) out.stack = redactText(error.stack);
    if (error instanceof CairnError) {
      out.code = error.code;
      out.retryable = error.retryable;
      const data: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(error)) {
        if (k !== "code" && typeof v !== "function") data[k] = v;
      }
      if (Object.keys(data).length)
        out.data = redactJson(JSON.parse(JSON.stringify(data)) as Json) as Record<string, Json>;
    } else {
      const code = (error as { code?: unknown }).code;
      if (typeof code === "string") out.code = code;
    }
    if (error.cause !== undefined && depth < 5) out.cause = serializeError(error.cause, depth + 1);
    return out;
  }
  return { name: "Error", message: redactText(typeof error === "string" ? error : safeString(error)) };
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** `error` with its text fields made storable ({@link storableText}), its causes too. */
export function storableError(error: SerializedError): SerializedError {
  const out: SerializedError = { ...error, name: storableText(error.name), message: storableText(error.message) };
  if (error.code !== undefined) out.code = storableText(error.code);
  if (error.stack !== undefined) out.stack = storableText(error.stack);
  if (error.cause !== undefined) out.cause = storableError(error.cause);
  return out;
}

/**
 * An error rebuilt from the journal that was not a Cairn error (a tool's own `Error`, a domain
 * provider's, a `TypeError`): its class cannot be rebuilt, as the journal holds data, not code.
 * It keeps the `name`, `message`, `code`, `stack` and cause the first one had, so a workflow that
 * branches on a user error tells it by `error.name` (or `code`), never by `instanceof` its class.
 * A workflow sees this for a failed step's user error live as well as on replay.
 */
export class ReplayedError extends Error {
  readonly code: string | undefined;
  readonly data: Record<string, unknown> | undefined;
  constructor(serialized: SerializedError) {
    super(serialized.message, serialized.cause ? { cause: deserializeError(serialized.cause) } : undefined);
    this.name = serialized.name;
    this.code = serialized.code;
    this.data = serialized.data;
    if (serialized.stack) this.stack = serialized.stack;
  }
}

/**
 * Rebuilds a thrown value from its journal form: a Cairn error into its own class with its data
 * (`instanceof ContextOverflowError` holds on replay as it did live), any other error as a
 * {@link ReplayedError}; causes likewise.
 */
export function deserializeError(serialized: SerializedError): Error {
  if (serialized.retryable !== undefined && serialized.code !== undefined) {
    const cause = serialized.cause ? deserializeError(serialized.cause) : undefined;
    const revived = reviveCairnError(serialized, cause);
    if (revived) return revived;
  }
  return new ReplayedError(serialized);
}
