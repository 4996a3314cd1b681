import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runtime, silentLogger } from "../src/index.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { wakeAgent } from "./sqlite-wake/wake-agent.ts";

/**
 * Wake-ups across processes on one SQLite file (DESIGN §7, SQLite wake-ups): a worker process
 * whose poll is 30 s claims a run another process started, resumes it on a signal that process
 * sends, and stops it on that process's cancel — each within 10 s, which only a wake-up allows
 * (the worker's start-up claim found no run; its next poll is 30 s later).
 */

const WORKER = join(import.meta.dirname, "sqlite-wake", "wake-worker.ts");
const dir = mkdtempSync(join(tmpdir(), "cairn-sqlite-wake-"));
const db = join(dir, "cairn.db");
let worker: ChildProcess | undefined;
let client: Runtime;

beforeAll(async () => {
  // The file and its schema exist before the worker opens it.
  const setup = new SqliteBackend({ path: db });
  await setup.init();
  await setup.close();
  worker = spawn(process.execPath, ["--import", "tsx", WORKER, db], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  worker.stderr?.on("data", (d) => (stderr += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the worker did not start\n${stderr}`)), 30_000);
    worker?.stdout?.on("data", (d: Buffer) => {
      if (d.toString().includes("ready")) {
        clearTimeout(timer);
        resolve();
      }
    });
    worker?.on("exit", (code) => reject(new Error(`the worker exited (${code})\n${stderr}`)));
  });
  client = new Runtime({
    agents: [wakeAgent],
    backend: new SqliteBackend({ path: db }),
    logger: silentLogger,
    worker: false,
  });
  await client.start();
}, 40_000);

afterAll(async () => {
  await client?.shutdown();
  worker?.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** Reads the run until it is in `state` (at most `timeoutMs`), returning it. */
async function until(runId: string, state: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await client.getRun(runId);
    if (run.state === state) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} is ${run.state}, not ${state}, after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("SQLite wake-ups across processes (worker poll 30 s)", { timeout: 40_000 }, () => {
  it("claims a new run, and resumes it on a signal sent from another process", async () => {
    const run = await client.run(wakeAgent, "park", {});
    await until(run.id, "PAUSED", 10_000);
    await client.signal(run.id, "go", { ok: true });
    const done = await client.waitFor(run.id, { timeoutMs: 10_000 });
    expect(done.state).toBe("COMPLETED");
    expect(done.output).toEqual({ woken: true });
  });

  it("stops a running run on a cancel sent from another process", async () => {
    const run = await client.run(wakeAgent, "spin", {});
    await until(run.id, "RUNNING", 10_000);
    await client.cancel(run.id, { reason: "test" });
    const done = await until(run.id, "CANCELLED", 10_000);
    expect(done.state).toBe("CANCELLED");
  });
});
