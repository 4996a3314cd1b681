import { createHash } from "node:crypto";
import { InvalidDefinitionError } from "../../core/errors.ts";
import type { Json } from "../../core/records.ts";

/** Step payloads stored out of line, once per content, in the `blobs` table of the SQL backends. */

/** A `blobs` row: a payload stored out of line, once per content. */
export interface BlobRow {
  /** sha-256 of `text`, in hex. */
  digest: string;
  /** The payload's JSON text. */
  text: string;
  /** UTF-8 bytes of `text`. */
  bytes: number;
}

/**
 * Bytes of JSON text above which a step's arguments or result are stored out of line (in
 * `blobs`), 256 KiB unless a backend's `inlineLimitBytes` says otherwise.
 */
export const DEFAULT_INLINE_LIMIT_BYTES = 256 * 1024;

/**
 * How a column that holds a reference to a blob begins: its whole text is
 * `{"$cairnBlob":"sha256:<hex>","bytes":N}`. A payload whose own text begins so is stored out of
 * line whatever its size, so a column that begins so is always a reference.
 */
const BLOB_REF = '{"$cairnBlob":"sha256:';

/** The `inlineLimitBytes` option of a SQL backend, checked, or the default. */
export function inlineLimit(option: number | undefined, backend: string): number {
  if (option === undefined) return DEFAULT_INLINE_LIMIT_BYTES;
  if (!(Number.isSafeInteger(option) && option >= 0)) {
    throw new InvalidDefinitionError(
      `${backend} inlineLimitBytes must be a whole number of bytes, 0 or more (got ${String(option)})`,
    );
  }
  return option;
}

/**
 * The column text of a payload: its JSON text, or, when that is longer than `limit` bytes, a
 * reference to a blob that `blobs` receives.
 */
export function encodePayload(value: Json | undefined, limit: number, blobs: BlobRow[]): string | null {
  if (value === undefined) return null;
  const text = JSON.stringify(value);
  const lookalike = text.startsWith(BLOB_REF);
  // A UTF-16 code unit takes 1 to 3 bytes of UTF-8: most texts need no count.
  if (!lookalike && text.length * 3 <= limit) return text;
  const bytes = Buffer.byteLength(text, "utf8");
  if (!lookalike && bytes <= limit) return text;
  const digest = createHash("sha256").update(text, "utf8").digest("hex");
  if (!blobs.some((b) => b.digest === digest)) blobs.push({ digest, text, bytes });
  return `${BLOB_REF}${digest}","bytes":${bytes}}`;
}

/** The digest a column refers to, when it holds a blob reference. */
export function blobDigest(text: string | null): string | undefined {
  if (text === null || !text.startsWith(BLOB_REF)) return undefined;
  return text.slice(BLOB_REF.length, BLOB_REF.length + 64);
}

/** The blobs' texts by digest. */
export type BlobTexts = ReadonlyMap<string, string>;
