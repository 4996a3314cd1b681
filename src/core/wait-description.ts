import type { WaitRecord } from "./records.ts";

/** A short description of a wait for transition reasons and listings: `signal "approved" (w3)`. */
export function describeWait(wait: Pick<WaitRecord, "kind" | "name" | "id">): string {
  switch (wait.kind) {
    case "user":
      return `question ${JSON.stringify(wait.name)} (${wait.id})`;
    case "retry":
      return `retry of "${wait.name}" (${wait.id})`;
    case "timer":
      return `timer (${wait.id})`;
    case "child":
      return `child run ${wait.name} (${wait.id})`;
    default:
      return `${wait.kind} "${wait.name}" (${wait.id})`;
  }
}
