import { MAX_JSON_DEPTH } from "../core/serialize.ts";

/**
 * What `JSON.parse` changes silently, found in a request body's text before it is parsed for use:
 * a number literal too large for a double (`1e309` would become Infinity, then null), an integer
 * literal past 2^53 that no double holds (`9007199254740993` would become ...992), and nesting
 * deeper than a payload
 * may (`MAX_JSON_DEPTH`, one more for the body's own object). Each is refused naming its place
 * in the body, so what a client sent is never stored as something else.
 */

/** A problem of a body's JSON text: where (keys and indexes from the body's root) and what. */
export interface JsonTextProblem {
  path: (string | number)[];
  message: string;
}

/** The deepest nesting a body may have: a payload's limit, plus the body's own object. */
export const MAX_BODY_DEPTH = MAX_JSON_DEPTH + 1;

interface Frame {
  array: boolean;
  /** The current key (object) or index (array). */
  at: string | number;
  /** Whether the next string of an object is a key. */
  expectKey: boolean;
}

/**
 * The first problem of `text`, which must be valid JSON (parse it first), or undefined. Reads the
 * text once, without recursion, so any depth is safe.
 */
export function scanJsonText(text: string): JsonTextProblem | undefined {
  const stack: Frame[] = [];
  const path = () => stack.map((f) => f.at);
  const n = text.length;
  for (let i = 0; i < n; ) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const end = stringEnd(text, i);
      const top = stack[stack.length - 1];
      if (top !== undefined && !top.array && top.expectKey) top.at = JSON.parse(text.slice(i, end)) as string;
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      stack.push({ array: c === 0x5b, at: c === 0x5b ? 0 : "", expectKey: c === 0x7b });
      if (stack.length > MAX_BODY_DEPTH) {
        stack.pop();
        return {
          path: path(),
          message: `nests arrays or objects more than ${MAX_JSON_DEPTH} levels deep; flatten it or pass a reference to it`,
        };
      }
      i++;
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop();
      i++;
    } else if (c === 0x3a) {
      const top = stack[stack.length - 1];
      if (top) top.expectKey = false;
      i++;
    } else if (c === 0x2c) {
      const top = stack[stack.length - 1];
      if (top?.array) top.at = (top.at as number) + 1;
      else if (top) top.expectKey = true;
      i++;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let end = i + 1;
      while (end < n && isNumberChar(text.charCodeAt(end))) end++;
      const literal = text.slice(i, end);
      const problem = numberProblem(literal);
      if (problem) return { path: path(), message: problem };
      i = end;
    } else {
      i++;
    }
  }
  return undefined;
}

/** Why a JSON number literal would not read back as written, or undefined. */
function numberProblem(literal: string): string | undefined {
  const value = Number(literal);
  if (!Number.isFinite(value)) {
    return `the number ${short(literal)} is too large for a JSON number (it would read as ${value > 0 ? "" : "-"}Infinity, and be stored as null); send it as a string`;
  }
  // Past 2^53 a double keeps only some integers: one it keeps (2^60, or 1e20, as a JSON encoder
  // writes a large double) reads back as written; any other would come back as another number.
  if (/^-?\d+$/.test(literal) && !Number.isSafeInteger(value) && String(value) !== literal) {
    return `the integer ${short(literal)} is past 2^53 - 1 (${Number.MAX_SAFE_INTEGER}) and would read as ${value}; send it as a string`;
  }
  return undefined;
}

function short(literal: string): string {
  return literal.length > 40 ? `${literal.slice(0, 20)}…${literal.slice(-10)} (${literal.length} characters)` : literal;
}

function isNumberChar(c: number): boolean {
  // digits, "+", "-", ".", "e", "E"
  return (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2d || c === 0x2e || c === 0x65 || c === 0x45;
}

/** The index after the string literal that starts at `start` (a quote). */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) i++;
    else if (c === 0x22) return i + 1;
  }
  return text.length;
}
