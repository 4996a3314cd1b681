import { createHash } from "node:crypto";

/** Texts up to this length are hashed in JavaScript; longer ones with native sha-256. */
const SHORT = 2048;

/**
 * A digest of a step's argument JSON, used to notice (and warn about) a replay whose arguments
 * changed. It is not a security boundary, so short texts — nearly all arguments — take a 64-bit
 * FNV-1a computed here (a sha-256 through `node:crypto` costs more than the rest of a step);
 * longer ones take sha-256. The text is hashed as produced, so the same arguments built with
 * their keys in another order also give a warning, never a failure.
 */
export function digestText(text: string): string {
  if (text.length > SHORT) return `s${createHash("sha256").update(text).digest("hex").slice(0, 32)}`;
  // FNV-1a over UTF-16 code units, in two 32-bit lanes with different offsets (64 bits in all).
  let a = 0x811c9dc5;
  let b = 0xcbf29ce4;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x0100019d);
  }
  return `f${(a >>> 0).toString(16).padStart(8, "0")}${(b >>> 0).toString(16).padStart(8, "0")}`;
}
