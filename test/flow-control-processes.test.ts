import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimOrder } from "../src/core/flow-control.ts";
import { Runtime, silentLogger } from "../src/index.ts";
import { PostgresBackend } from "../src/postgres.ts";
import { flowAgent } from "./flow-control/flow-agent.ts";
import { startTestDatabase, type TestDatabase } from "./helpers/postgres.ts";

/**
 * Flow control across processes on PostgreSQL (issue 28): 3 worker processes
 * (test/flow-control/worker-child.ts, 8 runs at once each) share one schema.
 *
 * - 100 runs over 5 concurrency keys with limit 2 (started before the workers, so that every
 *   claim contends): at no point do more than 2 runs of a key hold RUNNING. Checked from the
 *   transition log in commit-causal order: each transition's feed key is the id of the
 *   transaction that wrote it (`feedKey`), assigned at its first write, so a claim that saw a
 *   run's end (its slot free) has a larger one than that end. RUNNING intervals per key are
 *   replayed in that order and never exceed 2; the order is no clock.
 * - 20 runs with priorities from -3 to 3 under one key of limit 1 (a single slot that the
 *   three processes take in turn): they go RUNNING in priority order, then age.
 */

const CHILD = join(import.meta.dirname, "flow-control", "worker-child.ts");
let db: TestDatabase;
const children: ChildProcessWithoutNullStreams[] = [];

beforeAll(async () => {
  db = await startTestDatabase();
}, 60_000);

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  await db?.close();
});

/** Starts a worker process and waits for its `ready` line. */
function startWorker(schema: string): Promise<ChildProcessWithoutNullStreams> {
  const proc = spawn(process.execPath, ["--import", "tsx", CHILD, db.url, schema]);
  children.push(proc);
  let err = "";
  proc.stderr.on("data", (d: Buffer) => {
    err += d.toString();
  });
  return new Promise((resolve, reject) => {
    proc.stdout.on("data", (d: Buffer) => {
      if (d.toString().includes("ready ")) resolve(proc);
    });
    proc.on("exit", (code) => reject(new Error(`worker exited (${code}) before it was ready: ${err}`)));
  });
}

/** Stops the worker processes (SIGTERM) and waits for them. */
async function stopWorkers(): Promise<void> {
  await Promise.all(
    children.splice(0).map(
      (proc) =>
        new Promise<void>((resolve) => {
          if (proc.exitCode !== null) return resolve();
          proc.on("exit", () => resolve());
          proc.kill("SIGTERM");
        }),
    ),
  );
}

interface LoggedTransition {
  run_id: string;
  to_state: string;
  from_state: string | null;
  feed_key: string;
}

/** Every transition of the schema, in feed-key order (ends before starts within one transaction). */
async function transitionLog(schema: string): Promise<LoggedTransition[]> {
  const { rows } = await db.query<LoggedTransition>(
    `SELECT run_id, to_state, from_state, feed_key::text AS feed_key FROM "${schema}".transitions`,
  );
  const key = (t: LoggedTransition) => BigInt(t.feed_key);
  return rows.sort((a, b) => {
    const d = key(a) - key(b);
    if (d !== 0n) return d < 0n ? -1 : 1;
    return Number(a.to_state === "RUNNING") - Number(b.to_state === "RUNNING");
  });
}

async function untilSettled(runtime: Runtime, ids: string[]): Promise<void> {
  for (const id of ids) {
    const run = await runtime.waitFor(id, { timeoutMs: 120_000 });
    expect(run.state).toBe("COMPLETED");
  }
}

describe("flow control across 3 worker processes on PostgreSQL", () => {
  it("100 runs over 5 keys with limit 2 never hold more than 2 RUNNING per key", async () => {
    const schema = db.schema("flow");
    const runtime = new Runtime({
      agents: [flowAgent],
      backend: new PostgresBackend({ connectionString: db.url, schema }),
      logger: silentLogger,
      worker: false,
    });
    await runtime.start();
    try {
      const ids: string[] = [];
      for (let i = 0; i < 100; i++) {
        const handle = await runtime.run("flow_test", "keyed", { key: `k${i % 5}`, ms: 20 + (i % 3) * 10 });
        ids.push(handle.id);
      }
      await Promise.all([startWorker(schema), startWorker(schema), startWorker(schema)]);
      await untilSettled(runtime, ids);
      await stopWorkers();
      const runs = await runtime.listRuns({ limit: 1000 });
      const keyOf = new Map(runs.map((r) => [r.id, r.concurrencyKey]));
      expect(runs.every((r) => r.concurrencyLimit === 2 && r.concurrencyKey?.startsWith("k"))).toBe(true);
      const running = new Map<string, Set<string>>();
      let peak = 0;
      let starts = 0;
      for (const t of await transitionLog(schema)) {
        const key = keyOf.get(t.run_id) as string;
        const open = running.get(key) ?? new Set<string>();
        running.set(key, open);
        if (t.to_state === "RUNNING") {
          open.add(t.run_id);
          starts++;
        } else if (t.from_state === "RUNNING") open.delete(t.run_id);
        peak = Math.max(peak, open.size);
        expect(open.size, `key ${key} after ${t.run_id} -> ${t.to_state}`).toBeLessThanOrEqual(2);
      }
      expect(starts).toBeGreaterThanOrEqual(100);
      // The premise: the limit was reached (the runs contended for the slots).
      expect(peak).toBe(2);
      console.log(`flow-control: 100 runs over 5 keys, limit 2; peak RUNNING per key ${peak}`);
    } finally {
      await stopWorkers();
      await runtime.shutdown();
    }
  }, 180_000);

  it("claims runs in priority order, then age, as one slot frees after another", async () => {
    const schema = db.schema("prio");
    const runtime = new Runtime({
      agents: [flowAgent],
      backend: new PostgresBackend({ connectionString: db.url, schema }),
      logger: silentLogger,
      worker: false,
    });
    await runtime.start();
    try {
      const started: Array<{ id: string; priority: number; createdAt: number }> = [];
      for (let i = 0; i < 20; i++) {
        const priority = ((i * 5) % 7) - 3;
        const options = { concurrencyKey: "serial", concurrencyLimit: 1, priority };
        const handle = await runtime.run("flow_test", "work", { ms: 5 }, options);
        const run = await runtime.getRun(handle.id);
        started.push({ id: handle.id, priority, createdAt: run?.createdAt as number });
      }
      await Promise.all([startWorker(schema), startWorker(schema), startWorker(schema)]);
      await untilSettled(
        runtime,
        started.map((s) => s.id),
      );
      await stopWorkers();
      const order = (await transitionLog(schema)).filter((t) => t.to_state === "RUNNING").map((t) => t.run_id);
      const expected = [...started]
        .sort((a, b) => claimOrder(a) - claimOrder(b) || (a.id < b.id ? -1 : 1))
        .map((s) => s.id);
      expect(order).toEqual(expected);
    } finally {
      await stopWorkers();
      await runtime.shutdown();
    }
  }, 180_000);
});
