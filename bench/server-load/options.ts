import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

/** The bench's settings (its command line and constants), its scratch folder, and small helpers. */

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "30" },
    clients: { type: "string", default: "200" },
    rate: { type: "string", default: "50" },
  },
});
export const SECONDS = Number(values.seconds);
export const CLIENTS = Number(values.clients);
export const RATE = Number(values.rate);
/** Runs started one at a time before the clients connect and the load begins; not measured. */
export const WARM_UP = 50;
export const START_BODY = JSON.stringify({ agent: "report_builder", workflow: "build", input: { quarter: "2026-Q3" } });
export const EXPECTED_STATES = ["PENDING", "RUNNING", "COMPLETED"] as const;
export const FINAL = new Set(["COMPLETED", "FAILED", "BLOCKED", "CANCELLED", "COMPENSATED"]);

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const dir = mkdtempSync(join(tmpdir(), "cairn-server-load-"));

export const fmt = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
export const n = (v: number) => Math.round(v).toLocaleString("en-US");
/** Wall-clock ms with a fraction: what a transition's `at` (Date.now() in the server) is compared with. */
export const wallNow = () => performance.timeOrigin + performance.now();
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Resolves after `ms` without keeping the process alive. */
export const deadline = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** A transition as the feed and the transition log give it (what the bench compares). */
export interface Transition {
  runId: string;
  id: number;
  at: number;
  from: string | null;
  to: string;
}
