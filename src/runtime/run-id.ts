import { randomBytes } from "node:crypto";

/** Run ids sort by creation time: `run_` + base-36 milliseconds + random. */
export function newRunId(): string {
  return `run_${Date.now().toString(36).padStart(9, "0")}${randomBytes(5).toString("hex")}`;
}
