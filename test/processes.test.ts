import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { RunRecord } from "../src/index.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { SLOW_TOOLS } from "./crash/slow-agent.ts";
import { RECOVERED_PATH, STRAIGHT_PATH } from "./helpers/paths.ts";

/**
 * Real processes on one SQLite file: SIGTERM lets runs in flight finish within the grace period
 * and records INTERRUPTED for the rest; a second process finishes a run the first gave up
 * (SIGTERM) or lost (SIGKILL).
 */

const CHILD = join(import.meta.dirname, "crash", "slow-child.ts");
const root = mkdtempSync(join(tmpdir(), "cairn-procs-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Proc {
  proc: ChildProcessWithoutNullStreams;
  out: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(args: string[]): Proc {
  const proc = spawn(process.execPath, ["--import", "tsx", CHILD, ...args]);
  let out = "";
  let err = "";
  proc.stdout.on("data", (d) => (out += d));
  proc.stderr.on("data", (d) => (err += d));
  const timer = setTimeout(() => proc.kill("SIGKILL"), 40_000);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code !== 0 && err) console.error(err);
      resolve({ code, signal });
    }),
  );
  return { proc, out: () => out, exited };
}

async function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const progress = (dir: string) =>
  existsSync(join(dir, "progress")) ? readFileSync(join(dir, "progress"), "utf8").trim().split("\n") : [];
const runs = (dir: string) =>
  Array.from({ length: SLOW_TOOLS }, (_, i) => {
    const f = join(dir, `t${i + 1}`);
    return existsSync(f) ? readFileSync(f, "utf8").length : 0;
  });

async function inspect(db: string, runId: string) {
  const backend = new SqliteBackend({ path: db });
  await backend.init();
  try {
    const run = (await backend.getRun(runId)) as RunRecord;
    const transitions = await backend.listTransitions(runId);
    return { run, transitions, path: transitions.map((t) => `${t.from ?? "-"}>${t.to}`) };
  } finally {
    await backend.close();
  }
}

function fixture() {
  const dir = mkdtempSync(join(root, "case-"));
  return { dir, db: join(dir, "cairn.db") };
}

describe("SIGTERM", () => {
  it("records INTERRUPTED for a run still in flight after the grace period and releases it", async () => {
    const { dir, db } = fixture();
    const a = start([db, dir, "start", "100"]);
    await until("two tools done", () => progress(dir).length >= 2);
    a.proc.kill("SIGTERM");
    expect((await a.exited).code).toBe(143);
    const runId = /started (\S+)/.exec(a.out())?.[1] as string;
    const { run, transitions, path } = await inspect(db, runId);
    expect(run.state).toBe("INTERRUPTED");
    expect(run.leaseOwner).toBeNull();
    expect(path).toEqual(["->PENDING", "PENDING>RUNNING", "RUNNING>INTERRUPTED"]);
    const last = transitions.at(-1);
    expect(last?.actor).toEqual(transitions[1]?.actor);
    expect(last?.reason).toMatch(/shut down \(SIGTERM received\).*grace of 100 ms/);
    expect(runs(dir).slice(SLOW_TOOLS - 1)).toEqual([0]);
  });

  it("lets a run finish when it does so within the grace period", async () => {
    const { dir, db } = fixture();
    const a = start([db, dir, "start", "15000"]);
    await until("one tool done", () => progress(dir).length >= 1);
    a.proc.kill("SIGTERM");
    expect((await a.exited).code).toBe(143);
    const runId = /started (\S+)/.exec(a.out())?.[1] as string;
    const { run, path } = await inspect(db, runId);
    expect(path).toEqual(["->PENDING", "PENDING>RUNNING", "RUNNING>COMPLETED"]);
    expect(run.output).toEqual({ acc: 115 });
    expect(runs(dir)).toEqual([1, 1, 1, 1, 1]);
  });
});

describe("two processes on one SQLite file", () => {
  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    it(`a run the first process lost to ${signal} is finished by the second`, async () => {
      const { dir, db } = fixture();
      const b = start([db, dir, "worker", "any"]);
      await until("worker ready", () => b.out().includes("ready"));
      const a = start([db, dir, "start", "0"]);
      await until("two tools done", () => progress(dir).length >= 2);
      a.proc.kill(signal);
      await a.exited;
      expect((await b.exited).code).toBe(0);
      const runId = /started (\S+)/.exec(a.out())?.[1] as string;
      const { run, transitions, path } = await inspect(db, runId);
      expect(run.state).toBe("COMPLETED");
      expect(run.output).toEqual({ acc: 115 });
      // B is a worker for any run and may claim A's new run before A does; then A's signal cuts
      // nothing, B runs it start to end, and there is nothing more to check.
      if (path.length === 3 && !transitions[1]?.actor.id.includes(`:${a.proc.pid}:`)) {
        expect(path).toEqual(STRAIGHT_PATH);
        expect(runs(dir)).toEqual([1, 1, 1, 1, 1]);
        return;
      }
      expect(path).toEqual(RECOVERED_PATH);
      expect(transitions.map((t) => t.id)).toEqual([1, 2, 3, 4, 5, 6]);
      const [, claimedByA, interrupted, , resumedByB] = transitions;
      // SIGTERM: A records its own interruption; SIGKILL: B finds A's process gone.
      expect(interrupted?.actor.kind).toBe(signal === "SIGTERM" ? "worker" : "system");
      expect(interrupted?.reason).toContain(claimedByA?.actor.id);
      expect(resumedByB?.actor.id).not.toBe(claimedByA?.actor.id);
      // Tools with saved results ran once; the one in flight at most once more. Tool 1's result
      // was committed before tool 2 ran (with tool 2's start record); tool 2 may have finished
      // without its result committed yet when the signal came, and so be the one that runs again.
      const counts = runs(dir);
      expect(counts[0]).toBe(1);
      expect(counts.every((n) => n >= 1 && n <= 2)).toBe(true);
      expect(counts.filter((n) => n === 2).length).toBeLessThanOrEqual(1);
    });
  }
});
