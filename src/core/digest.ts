import { createHash } from "node:crypto";

/**
 * Short sha-256 of a step's argument JSON, used to notice (and warn about) a replay whose
 * arguments changed. The text is hashed as produced, so the same arguments built with their
 * keys in another order also give a warning, never a failure.
 */
export function digestText(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 32);
}
