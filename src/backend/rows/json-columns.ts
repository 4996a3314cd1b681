/**
 * The row shapes of the SQL backends (SQLite, PostgreSQL) and their mapping to records live in
 * `rows/`, shared so the backends store and read exactly the same thing. JSON columns hold text:
 * SQL NULL is `undefined`, the JSON text `null` is JSON null, so the two stay distinct through a
 * round trip. A step's arguments and result above the backend's inline limit are kept out of line
 * in `blobs` (`step-rows.ts`, `blob-payloads.ts`).
 */

/** JSON text for a column, or NULL for `undefined`. */
export function encode(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

/** The value of a JSON column's text, `undefined` for NULL. */
export function decode<T>(text: string | null): T | undefined {
  return text === null ? undefined : (JSON.parse(text) as T);
}
