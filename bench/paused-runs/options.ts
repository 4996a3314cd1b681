import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

/** The bench's settings, its scratch folder, and the forced gc its heap figures need. */

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "10000" },
    signals: { type: "string", default: "1000" },
    concurrency: { type: "string", default: "64" },
  },
});
export const RUNS = Number(values.runs);
export const SIGNALS = Math.min(Number(values.signals), RUNS);
export const CONCURRENCY = Number(values.concurrency);
export const WARM_UP = 200;

export const collectGarbage = (globalThis as { gc?: () => void }).gc;
if (!collectGarbage) {
  console.error("run with node --expose-gc (npm run bench:paused does): the heap figures need a forced gc");
  process.exit(1);
}

export const dir = mkdtempSync(join(tmpdir(), "cairn-paused-"));
