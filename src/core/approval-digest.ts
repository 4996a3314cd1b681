import { createHash } from "node:crypto";
import type { Json } from "./records.ts";

/** The digest an approver presents: sha-256 of the payload's JSON text. */
export function approvalDigest(payload: Json): string {
  return `sha256:${createHash("sha256").update(JSON.stringify(payload)).digest("hex")}`;
}
