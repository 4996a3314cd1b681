import { InvalidInputError } from "./errors.ts";

/**
 * The rules for text Cairn stores outside a JSON payload (ids, keys, names, reasons, notes, error
 * messages): well-formed Unicode without NUL, the same on every backend.
 *
 * PostgreSQL refuses a NUL in a text value (and in JSON it takes apart), UTF-8 has no encoding for
 * a lone UTF-16 surrogate (the drivers of SQLite and PostgreSQL both write U+FFFD in its place, so
 * two different keys would become one). So text that comes from outside (a key, a signal name, a
 * cancel reason) is refused where it enters, naming the field ({@link checkText}); text Cairn
 * makes from what code threw or said (an error message, a reason quoting it) is made storable
 * ({@link storableText}) before it is written, so a run ends with its real error on every backend.
 * JSON payloads (inputs, results, signals, answers) keep such characters: they travel as JSON
 * escapes, which every backend stores and reads back as they were.
 */

/** The replacement character written in place of a NUL or a lone surrogate. */
export const REPLACEMENT = "\uFFFD";

/** Whether `text` can be stored as it is (a string, no NUL, no lone surrogate): the fast check. */
export function isStorableText(text: unknown): text is string {
  return typeof text === "string" && !text.includes("\u0000") && text.isWellFormed();
}

/** Why `text` cannot be stored as it is (the first problem, with its index), or undefined. */
export function textProblem(text: string): string | undefined {
  const nul = text.indexOf("\u0000");
  const wellFormed = text.isWellFormed();
  if (nul < 0 && wellFormed) return undefined;
  const surrogate = wellFormed ? -1 : loneSurrogateAt(text);
  if (nul >= 0 && (surrogate < 0 || nul < surrogate)) return `a NUL character (U+0000) at index ${nul}`;
  const unit = text.charCodeAt(surrogate).toString(16).toUpperCase();
  return `a lone UTF-16 surrogate (U+${unit}) at index ${surrogate}, which no UTF-8 store can keep`;
}

/**
 * Checks text that enters a run from outside (an argument of a client call): a string, not
 * longer than `maxLength`, and storable. Throws {@link InvalidInputError} naming `field`, the
 * problem and the fix; nothing is written.
 */
export function checkText(
  value: unknown,
  field: string,
  options: { maxLength?: number; allowEmpty?: boolean } = {},
): string {
  if (typeof value !== "string") {
    throw new InvalidInputError(
      `${field} must be a string (got ${value === null ? "null" : Array.isArray(value) ? "an array" : typeof value}); nothing was written`,
      [{ path: [field], message: "not a string" }],
    );
  }
  if (!options.allowEmpty && value.length === 0) {
    throw new InvalidInputError(`${field} must not be empty; nothing was written`, [
      { path: [field], message: "empty" },
    ]);
  }
  const max = options.maxLength ?? MAX_TEXT_LENGTH;
  if (value.length > max) {
    throw new InvalidInputError(
      `${field} is ${value.length} characters long, over the limit of ${max}; pass a shorter value (nothing was written)`,
      [{ path: [field], message: "too long" }],
    );
  }
  const problem = textProblem(value);
  if (problem) {
    throw new InvalidInputError(
      `${field} contains ${problem}; pass well-formed text without NUL characters (nothing was written)`,
      [{ path: [field], message: problem }],
    );
  }
  return value;
}

/** Like {@link checkText} for an optional value: undefined passes. */
export function checkOptionalText(
  value: unknown,
  field: string,
  options?: { maxLength?: number; allowEmpty?: boolean },
): string | undefined {
  return value === undefined ? undefined : checkText(value, field, options);
}

/** The default longest text a client call takes for an id, a key, a name or a reason. */
export const MAX_TEXT_LENGTH = 4096;

/**
 * `text` with every NUL and lone surrogate replaced by U+FFFD: what Cairn writes for text it did
 * not take from a caller (an error's message, a reason that quotes one), so that the record is
 * written on every backend and says the same on each. Well-formed text comes back as it was.
 */
export function storableText(text: string): string {
  if (text.isWellFormed() && !text.includes("\u0000")) return text;
  return text.toWellFormed().replaceAll("\u0000", REPLACEMENT);
}

function loneSurrogateAt(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      return i;
    }
    if (unit >= 0xdc00 && unit <= 0xdfff) return i;
  }
  return -1;
}
