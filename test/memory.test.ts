import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import v8 from "node:v8";
import vm from "node:vm";
import { afterAll, describe, expect, it } from "vitest";
import { defineAgent } from "../src/agent/define.ts";
import { SqliteBackend } from "../src/backend/sqlite/sqlite-backend.ts";
import { silentLogger } from "../src/core/logger.ts";
import { Runtime } from "../src/runtime/runtime.ts";

/**
 * What a run costs the process that started or paused it, once nothing is happening to it (issue
 * 26): a client-only runtime keeps nothing per run it started, and a paused run holds no memory.
 * Leak tests, not timing tests: the heap after a full collection, before and after many runs, on a
 * SQLite store (its rows live in the file, not on the heap). Before the event streams were kept
 * only while a run executes here or someone reads it, these grew by about 640 and 1,160 bytes a run.
 */

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

/** The heap in use after full collections. */
function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

const parked = defineAgent({
  name: "parked",
  tools: {},
  workflows: {
    async wait(ctx) {
      await ctx.waitForSignal("never");
      return null;
    },
  },
});

const dir = mkdtempSync(join(tmpdir(), "cairn-memory-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** At most this much growth per run, once the store's own caches are warm. */
const BYTES_PER_RUN = 200;

describe("what a run leaves in memory", () => {
  it("a client-only runtime keeps nothing of the 30,000 runs it started", async () => {
    const backend = new SqliteBackend({ path: join(dir, "client.db"), durability: "process" });
    const rt = new Runtime({ agents: [parked], backend, logger: silentLogger, worker: false });
    try {
      const start = async (n: number) => {
        for (let i = 0; i < n; i += 100) {
          await Promise.all(Array.from({ length: Math.min(100, n - i) }, () => rt.run("parked", "wait", {})));
        }
      };
      await start(2_000);
      const before = heapAfterGc();
      await start(30_000);
      const grown = heapAfterGc() - before;
      expect(grown / 30_000, `${grown} bytes for 30,000 runs`).toBeLessThan(BYTES_PER_RUN / 4);
    } finally {
      await rt.shutdown();
    }
  }, 120_000);

  it("10,000 paused runs hold no memory in the runtime that paused them", async () => {
    const backend = new SqliteBackend({ path: join(dir, "paused.db"), durability: "process" });
    const rt = new Runtime({ agents: [parked], backend, logger: silentLogger, worker: { concurrency: 50 } });
    try {
      const park = async (n: number) => {
        for (let i = 0; i < n; i += 500) {
          await Promise.all(Array.from({ length: Math.min(500, n - i) }, () => rt.run("parked", "wait", {})));
        }
        for (;;) {
          const open = await backend.listRuns({ state: ["PENDING", "RUNNING", "RESUMING"], limit: 1 });
          if (open.length === 0) return;
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      await park(1_000);
      const before = heapAfterGc();
      await park(10_000);
      const grown = heapAfterGc() - before;
      expect(await backend.listRuns({ state: "PAUSED", limit: 20_000 })).toHaveLength(11_000);
      expect(grown / 10_000, `${grown} bytes for 10,000 paused runs`).toBeLessThan(BYTES_PER_RUN);
    } finally {
      await rt.shutdown();
    }
  }, 180_000);
});
