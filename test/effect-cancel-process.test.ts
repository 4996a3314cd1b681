import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { AgentLike } from "../src/agent/decorators.ts";
import type { RunRecord, StepRecord } from "../src/core/records.ts";
import { Runtime, silentLogger } from "../src/index.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import type { WorkerOptions } from "../src/worker/worker-options.ts";
import { stubbornPayAgent } from "./effect-cancel/stubborn-agent.ts";
import { until } from "./helpers/runtime-helpers.ts";
import { payAgent } from "./invariants/effect-agent.ts";

/**
 * Cancelling a run whose effect is in flight, with real processes (SQLite files shared between
 * them): a worker SIGKILLed right after its effect applied, then the run cancelled; a tool that
 * ignores its abort signal in a worker process, which carries the cancel out after the grace, or
 * is SIGKILLed while it waits out the grace. In each case the effect's outcome is asked of its
 * status query and recorded, and the run ends CANCELLED only once it is known.
 */

const root = mkdtempSync(join(tmpdir(), "cairn-effect-cancel-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

function start(script: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, script), ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d) => (stdout += d));
  child.stderr?.on("data", (d) => (stderr += d));
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal })),
  );
  return { child, closed, out: () => stdout, err: () => stderr };
}

function runtimeOn(db: string, agent: AgentLike, worker: WorkerOptions | false) {
  return new Runtime({ agents: [agent], backend: new SqliteBackend({ path: db }), logger: silentLogger, worker });
}

function theStep(steps: readonly StepRecord[]): StepRecord & { effect: NonNullable<StepRecord["effect"]> } {
  const [step] = steps;
  if (!step?.effect) throw new Error("no effect step");
  return step as StepRecord & { effect: NonNullable<StepRecord["effect"]> };
}

function ledgerLines(dir: string): string[] {
  const path = join(dir, "ledger.txt");
  return existsSync(path) ? readFileSync(path, "utf8").trim().split("\n") : [];
}

describe("cancelling an effect in flight, across processes", () => {
  it("a worker killed inside an effect, then the run cancelled: the claim asks the status query", async () => {
    const dir = mkdtempSync(join(root, "killed-"));
    const db = join(dir, "cairn.db");
    const killed = start("invariants/kill-in-effect.ts", [db, dir], { CAIRN_KILL_IN_EFFECT: "1" });
    expect((await killed.closed).signal).toBe("SIGKILL");

    // No automatic recovery: the lost run stays INTERRUPTED, and the cancel makes it CANCELLING.
    const rt = runtimeOn(db, payAgent(dir), { pollIntervalMs: 20, maxAutoRecoveries: 0 });
    try {
      await rt.start();
      const [left] = await rt.listRuns({ agent: "payer" });
      if (!left) throw new Error("no run");
      expect((await rt.waitFor(left.id, { timeoutMs: 20_000 })).state).toBe("INTERRUPTED");
      expect((await rt.cancel(left.id, { by: "ops", reason: "customer withdrew" })).state).toBe("CANCELLING");
      const ended = await rt.waitFor(left.id, { timeoutMs: 20_000 });
      expect(ended.state).toBe("CANCELLED");
      const { steps, transitions } = await rt.history(left.id);
      expect(transitions.map((t) => t.to).slice(-3)).toEqual(["INTERRUPTED", "CANCELLING", "CANCELLED"]);
      const step = theStep(steps);
      expect(step.attempts[0]?.error).toMatchObject({ name: "AttemptInterrupted" });
      expect(step).toMatchObject({ status: "completed", result: { paid: true } });
      expect(step.effect).toMatchObject({
        status: "applied",
        settledBy: "status",
        receipt: { ledger: ledgerLines(dir)[0] },
      });
      expect(step.effect.statusAnswers?.map((a) => [a.attempt, a.outcome])).toEqual([[1, "applied"]]);
      expect(ended.error?.data).toMatchObject({
        stopped: "after_step",
        inFlight: [{ seq: 1, name: "pay", outcome: "completed", effect: { id: "e1", status: "applied" } }],
      });
      expect(ledgerLines(dir)).toHaveLength(1);
    } finally {
      await rt.shutdown();
    }
  }, 60_000);

  /** Starts the stubborn child, waits until its effect applied, and cancels the run from here. */
  async function stubbornRunCancelled(dir: string, graceMs: number) {
    const db = join(dir, "cairn.db");
    const proc = start("effect-cancel/stubborn-child.ts", [db, dir, String(graceMs)]);
    const runId = await until(() => /run (\S+)/.exec(proc.out())?.[1], { timeoutMs: 30_000, what: "the run id" });
    await until(() => ledgerLines(dir).length > 0, { timeoutMs: 30_000, what: "the payment" });
    const client = runtimeOn(db, stubbornPayAgent(dir), false);
    await client.start();
    await client.cancel(runId, { by: "ops", reason: "customer withdrew" });
    return { db, proc, runId, client };
  }

  function expectAppliedBy(step: StepRecord & { effect: NonNullable<StepRecord["effect"]> }, cutOff: string) {
    expect(step.attempts[0]?.error).toMatchObject({ name: cutOff });
    expect(step.effect).toMatchObject({ status: "applied", settledBy: "status" });
    expect(step.effect.statusAnswers?.map((a) => [a.attempt, a.outcome])).toEqual([[1, "applied"]]);
  }

  it("a tool that ignores its abort signal: its worker asks the status query after the grace", async () => {
    const dir = mkdtempSync(join(root, "stubborn-"));
    const { proc, runId, client } = await stubbornRunCancelled(dir, 300);
    try {
      const closed = await proc.closed;
      expect(closed.code, proc.err()).toBe(0);
      expect(proc.out()).toContain("settled CANCELLED");
      const ended: RunRecord = await client.getRun(runId);
      expect(ended.state).toBe("CANCELLED");
      const step = theStep(await client.backend.loadSteps(runId));
      expectAppliedBy(step, "AttemptAbandoned");
      expect(ended.error?.data).toMatchObject({
        stopped: "after_step",
        inFlight: [{ seq: 1, outcome: "completed", effect: { id: "e1", status: "applied" } }],
      });
    } finally {
      await client.shutdown();
    }
  }, 60_000);

  it("a tool that ignores its abort signal, its worker killed during the grace: the next worker asks", async () => {
    const dir = mkdtempSync(join(root, "stubborn-killed-"));
    const { db, proc, runId, client } = await stubbornRunCancelled(dir, 60_000);
    try {
      // The child's worker took the cancel up (the tool's signal fired) and is waiting out its
      // grace, the run still RUNNING: kill it there.
      await until(() => existsSync(join(dir, "aborted")), { timeoutMs: 30_000, what: "the tool's abort signal" });
      expect(await client.getRun(runId)).toMatchObject({ state: "RUNNING", stopRequest: { kind: "cancel" } });
      proc.child.kill("SIGKILL");
      expect((await proc.closed).signal).toBe("SIGKILL");
      expect(theStep(await client.backend.loadSteps(runId)).effect.status).toBe("intended");

      const rt = runtimeOn(db, stubbornPayAgent(dir), { pollIntervalMs: 20 });
      try {
        await rt.start();
        let ended = await rt.waitFor(runId, { timeoutMs: 20_000 });
        while (ended.state === "INTERRUPTED") ended = await rt.waitFor(runId, { timeoutMs: 20_000 });
        expect(ended.state).toBe("CANCELLED");
        const { steps, transitions } = await rt.history(runId);
        expect(transitions.map((t) => t.to)).toContain("INTERRUPTED");
        expect(transitions.at(-1)?.to).toBe("CANCELLED");
        expectAppliedBy(theStep(steps), "AttemptInterrupted");
        expect(ended.error?.data).toMatchObject({
          by: "ops",
          stopped: "after_step",
          inFlight: [{ seq: 1, outcome: "completed", effect: { id: "e1", status: "applied" } }],
        });
        expect(ledgerLines(dir)).toHaveLength(1);
      } finally {
        await rt.shutdown();
      }
    } finally {
      await client.shutdown();
    }
  }, 60_000);
});
