import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import {
  ApprovalRefusedError,
  approvalDigest,
  InvalidInputError,
  type PausedReason,
  RunNotOpenError,
  type RunRecord,
  Runtime,
  silentLogger,
  type TransitionRecord,
  type WaitRecord,
} from "../src/index.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { executions, pauseAgent, SHIP_APPROVERS, SHIP_PAYLOAD } from "./pause/pause-agent.ts";

/**
 * Pause and resume across real processes on one SQLite file (DESIGN §3–§4): process A starts a
 * run and pauses it (every PausedReason), A is SIGKILLed while the run is PAUSED, the test
 * resolves what the run waits for from its own client-only runtime (or lets a timer come due
 * while no process is alive), and a fresh process B finishes the run by replay. Tools counted
 * in files outside the database show that what completed before the pause never runs again.
 * Then approval edge cases (expiry across a restart, refusals, a race between approve and deny
 * from two processes) and signal delivery (duplicates, a signal sent before its wait exists).
 */

const CHILD = join(import.meta.dirname, "pause", "pause-child.ts");

interface Proc {
  proc: ChildProcessWithoutNullStreams;
  out(): string;
  err(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** What a worker process printed when its run ended. */
interface Ended {
  runId: string;
  state: RunRecord["state"];
  output: unknown;
  error: RunRecord["error"];
}

/** One test's temp dir, database, client-only runtime and child processes, all cleaned up after it. */
interface Case {
  dir: string;
  db: string;
  client: Runtime;
  /** Starts a child process (`pause-child.ts <mode> <db> ...`), SIGKILLed after the test if still alive. */
  child(mode: "start" | "worker" | "decide", ...args: string[]): Proc;
  /** Process A: starts `workflow` and returns the run id; with `stay`, A's worker outlives the run. */
  startA(workflow: string, input: unknown, then?: "exit" | "stay"): Promise<{ a: Proc; runId: string }>;
  /** Process B: a worker until `runId` ends; returns how it ended. */
  finishB(runId: string, during?: (b: Proc) => Promise<void>): Promise<Ended>;
  /** Polls the run (from the test's own runtime) until `check` accepts it. */
  until(runId: string, what: string, check: (run: RunRecord) => boolean, timeoutMs?: number): Promise<RunRecord>;
  /** Waits until the run is PAUSED for `reason`. */
  paused(runId: string, reason: PausedReason): Promise<RunRecord>;
  /** `to(pausedReason)` of every transition of the run. */
  path(runId: string): Promise<string[]>;
  count(name: string): number;
}

async function setup(): Promise<Case> {
  const dir = mkdtempSync(join(tmpdir(), "cairn-pause-"));
  const db = join(dir, "cairn.db");
  const client = new Runtime({
    agents: [pauseAgent(dir)],
    backend: new SqliteBackend({ path: db }),
    logger: silentLogger,
    worker: false,
  });
  await client.start();
  const procs: Proc[] = [];
  onTestFinished(async () => {
    for (const p of procs) {
      if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill("SIGKILL");
      await p.exited;
    }
    await client.shutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  const child = (mode: string, ...args: string[]): Proc => {
    const proc = spawn(process.execPath, ["--import", "tsx", CHILD, mode, db, ...args]);
    let out = "";
    let err = "";
    proc.stdout.on("data", (d) => (out += d));
    proc.stderr.on("data", (d) => (err += d));
    const timer = setTimeout(() => proc.kill("SIGKILL"), 40_000);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      proc.on("close", (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal });
      }),
    );
    const p = { proc, out: () => out, err: () => err, exited };
    procs.push(p);
    return p;
  };

  const until = async (runId: string, what: string, check: (run: RunRecord) => boolean, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const run = await client.backend.getRun(runId);
      if (run && check(run)) return run;
      if (Date.now() > deadline) {
        const p = await client.backend.listTransitions(runId).catch(() => []);
        throw new Error(`timed out waiting for run ${runId} to be ${what}; transitions: ${show(p).join(" ")}`);
      }
      await sleep(25);
    }
  };

  const c: Case = {
    dir,
    db,
    client,
    child,
    async startA(workflow, input, then = "exit") {
      const a = child("start", dir, workflow, JSON.stringify(input), then);
      await waitFor("process A to start the run", () => /started (\S+)/.test(a.out()), a);
      const runId = /started (\S+)/.exec(a.out())?.[1] as string;
      return { a, runId };
    },
    async finishB(runId, during) {
      const b = child("worker", dir, runId);
      if (during) await during(b);
      const { code } = await b.exited;
      expect(code, `process B failed:\n${b.err()}`).toBe(0);
      return JSON.parse(b.out().trim().split("\n").at(-1) ?? "{}") as Ended;
    },
    until,
    paused: (runId, reason) =>
      until(runId, `PAUSED (${reason})`, (r) => r.state === "PAUSED" && r.pausedReason === reason),
    path: async (runId) => show(await client.backend.listTransitions(runId)),
    count: (name) => executions(dir, name),
  };
  return c;
}

/** Kills a process with SIGKILL and waits until it is gone. */
async function kill(p: Proc): Promise<void> {
  p.proc.kill("SIGKILL");
  const { signal } = await p.exited;
  expect(signal, `the process should die by SIGKILL\n${p.err()}`).toBe("SIGKILL");
}

async function waitFor(what: string, check: () => boolean, p?: Proc, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (p && (p.proc.exitCode !== null || p.proc.signalCode !== null)) {
      throw new Error(`process ended while waiting for ${what}:\n${p.out()}\n${p.err()}`);
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function show(transitions: readonly TransitionRecord[]): string[] {
  return transitions.map((t) => (t.pausedReason ? `${t.to}(${t.pausedReason})` : t.to));
}

/** The one open wait of a run. */
async function openWait(client: Runtime, runId: string): Promise<WaitRecord> {
  const open = (await client.waits(runId)).filter((w) => w.status === "open");
  expect(open, `open waits of ${runId}`).toHaveLength(1);
  return open[0] as WaitRecord;
}

/** How the run ended after the resume: the last four transitions. */
function endsWith(path: string[], reason: PausedReason, end = "COMPLETED"): void {
  expect(path.slice(-4)).toEqual([`PAUSED(${reason})`, "RESUMING", "RUNNING", end]);
}

async function refusal(promise: Promise<unknown>): Promise<ApprovalRefusedError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApprovalRefusedError);
  return error as ApprovalRefusedError;
}

const SHIP_DIGEST = approvalDigest(SHIP_PAYLOAD);

describe("every PausedReason survives a SIGKILL of the process that paused", () => {
  it("awaiting_signal: signalled while no process is alive", async () => {
    const c = await setup();
    const { a, runId } = await c.startA("signal", null);
    await c.paused(runId, "awaiting_signal");
    await kill(a);
    const sent = await c.client.signal(runId, "go", { go: 7 }, { messageId: "go-1" });
    expect(sent).toMatchObject({ duplicate: false, deliveredTo: "w2" });
    expect((await c.client.getRun(runId)).state).toBe("RESUMING");

    const end = await c.finishB(runId);
    expect(end).toMatchObject({ state: "COMPLETED", output: { before: "before", go: { go: 7 }, after: "after" } });
    expect(await c.path(runId)).toEqual([
      "PENDING",
      "RUNNING",
      "PAUSED(awaiting_signal)",
      "RESUMING",
      "RUNNING",
      "COMPLETED",
    ]);
    expect([c.count("before"), c.count("after")]).toEqual([1, 1]);
  });

  it("awaiting_user: a bad answer is refused, a good one resumes the run in a new process", async () => {
    const c = await setup();
    const { a, runId } = await c.startA("ask", null);
    await c.paused(runId, "awaiting_user");
    await kill(a);
    const wait = await openWait(c.client, runId);
    expect(wait).toMatchObject({ kind: "user", name: "how many?" });
    await expect(c.client.answer(runId, wait.id, { n: 0 }, { by: "carol" })).rejects.toThrow(InvalidInputError);
    expect((await c.client.getRun(runId)).state).toBe("PAUSED");
    await c.client.answer(runId, wait.id, { n: 3 }, { by: "carol" });

    const end = await c.finishB(runId);
    expect(end).toMatchObject({ state: "COMPLETED", output: { n: 3 } });
    endsWith(await c.path(runId), "awaiting_user");
    expect([c.count("before"), c.count("after")]).toEqual([1, 1]);
    const [answered] = await c.client.waits(runId);
    expect(answered?.resolution).toMatchObject({ outcome: "answered", value: { n: 3 }, by: { id: "carol" } });
  });

  it("awaiting_timer: the timer comes due while no process is alive and fires when B starts", async () => {
    const c = await setup();
    const { a, runId } = await c.startA("sleep", { ms: 2000 });
    await c.paused(runId, "awaiting_timer");
    await kill(a);
    const timer = await openWait(c.client, runId);
    expect(timer.kind).toBe("timer");
    // Nobody is alive when the timer comes due.
    await sleep(Math.max(0, (timer.dueAt as number) - Date.now()) + 100);
    expect((await c.client.getRun(runId)).state).toBe("PAUSED");

    const end = await c.finishB(runId);
    expect(end).toMatchObject({ state: "COMPLETED", output: { slept: 2000 } });
    const transitions = await c.client.backend.listTransitions(runId);
    expect(show(transitions)).toEqual([
      "PENDING",
      "RUNNING",
      "PAUSED(awaiting_timer)",
      "RESUMING",
      "RUNNING",
      "COMPLETED",
    ]);
    expect(transitions[3]?.actor.kind).toBe("system");
    expect([c.count("before"), c.count("after")]).toEqual([1, 1]);
    const [fired] = await c.client.waits(runId);
    expect(fired?.resolution?.outcome).toBe("fired");
  });

  it("awaiting_approval (ctx.requestApproval): approved while no process is alive", async () => {
    const c = await setup();
    const { a, runId } = await c.startA("approve", { expiresInMs: 60_000 });
    await c.paused(runId, "awaiting_approval");
    await kill(a);
    const approval = await openWait(c.client, runId);
    expect(approval).toMatchObject({ kind: "approval", name: "ship" });
    expect(approval.details).toMatchObject({ payload: SHIP_PAYLOAD, digest: SHIP_DIGEST, approvers: SHIP_APPROVERS });
    await c.client.approve(runId, approval.id, { by: "alice", digest: SHIP_DIGEST });

    const end = await c.finishB(runId);
    expect(end).toMatchObject({ state: "COMPLETED", output: { approvedBy: "alice" } });
    endsWith(await c.path(runId), "awaiting_approval");
    expect([c.count("before"), c.count("after")]).toEqual([1, 1]);
  });

  it("awaiting_approval (a tool with `approval`): the tool runs only in B, once approved", async () => {
    const c = await setup();
    const { a, runId } = await c.startA("payTool", { amount: 30 });
    await c.paused(runId, "awaiting_approval");
    await kill(a);
    const approval = await openWait(c.client, runId);
    expect(approval).toMatchObject({ kind: "approval", name: "tool:pay" });
    expect(c.count("pay")).toBe(0);
    await c.client.approve(runId, approval.id, { by: "alice", digest: approvalDigest({ amount: 30 }) });

    const end = await c.finishB(runId);
    expect(end).toMatchObject({ state: "COMPLETED", output: { paid: 30 } });
    endsWith(await c.path(runId), "awaiting_approval");
    expect([c.count("before"), c.count("pay"), c.count("after")]).toEqual([1, 1, 1]);
  });

  it("awaiting_child: the child's signal arrives while no process is alive; B finishes child then parent", async () => {
    const c = await setup();
    const { a, runId } = await c.startA("parent", null);
    await c.paused(runId, "awaiting_child");
    const childWait = await openWait(c.client, runId);
    expect(childWait.kind).toBe("child");
    const childId = childWait.name;
    expect(childId).toBe(`${runId}.2`);
    await c.paused(childId, "awaiting_signal");
    await kill(a);
    await c.client.signal(childId, "go", "child-go", { messageId: "c1" });
    expect((await c.client.getRun(runId)).state).toBe("PAUSED");

    const end = await c.finishB(runId);
    expect(end).toMatchObject({
      state: "COMPLETED",
      output: { child: childId, result: { got: "child-go" } },
    });
    endsWith(await c.path(runId), "awaiting_child");
    endsWith(await c.path(childId), "awaiting_signal");
    expect((await c.client.getRun(childId)).output).toEqual({ got: "child-go" });
    expect(["parent-before", "child-before", "child-after", "parent-after"].map(c.count)).toEqual([1, 1, 1, 1]);
  });

  it("suspended_orphan: a child left paused by its parent is resumed in B and then signalled", async () => {
    const c = await setup();
    // A's worker stays up after the parent ends: it carries out the suspension of the child.
    const { a, runId } = await c.startA("orphanParent", null, "stay");
    const childId = `${runId}.2`;
    // The child runs its first tool and waits for its signal; then its parent returns without it.
    await c.paused(childId, "awaiting_signal");
    await c.paused(runId, "awaiting_signal");
    await c.client.signal(runId, "release", null);
    const parent = await c.until(runId, "COMPLETED", (r) => r.state === "COMPLETED");
    expect(parent.output).toEqual({ child: childId });
    await c.paused(childId, "suspended_orphan");
    await kill(a);
    expect(c.count("child-before")).toBe(1);

    const end = await c.finishB(childId, async () => {
      await c.client.resume(childId);
      // Back by replay (in B), it waits for its signal again — then gets it.
      await c.paused(childId, "awaiting_signal");
      await c.client.signal(childId, "go", "late", { messageId: "o1" });
    });
    expect(end).toMatchObject({ state: "COMPLETED", output: { got: "late" } });
    expect(await c.path(childId)).toEqual([
      "PENDING",
      "RUNNING",
      "PAUSED(awaiting_signal)",
      "RESUMING", // to be suspended: its parent ended
      "RUNNING",
      "PAUSED(suspended_orphan)",
      "RESUMING", // resume(child)
      "RUNNING",
      "PAUSED(awaiting_signal)",
      "RESUMING", // signal "go"
      "RUNNING",
      "COMPLETED",
    ]);
    expect(await c.path(runId)).toEqual([
      "PENDING",
      "RUNNING",
      "PAUSED(awaiting_signal)",
      "RESUMING",
      "RUNNING",
      "COMPLETED",
    ]);
    // Tools that completed before the suspension did not run again.
    expect([c.count("parent-before"), c.count("child-before"), c.count("child-after")]).toEqual([1, 1, 1]);
  });

  it("awaiting_retry: a long backoff pauses the run; B retries when it is due, pausing again in between", async () => {
    const c = await setup();
    const { a, runId } = await c.startA("retry", null);
    await c.paused(runId, "awaiting_retry");
    await kill(a);
    const backoff = await openWait(c.client, runId);
    // The backoff before attempt 2 of step 2.
    expect(backoff).toMatchObject({ kind: "retry", name: "flaky", id: "r2.2", details: { attempt: 2 } });
    expect(c.count("flaky")).toBe(1);

    const end = await c.finishB(runId);
    expect(end).toMatchObject({ state: "COMPLETED", output: { flaky: { attempt: 3, executions: 3 } } });
    expect(await c.path(runId)).toEqual([
      "PENDING",
      "RUNNING",
      "PAUSED(awaiting_retry)",
      "RESUMING",
      "RUNNING",
      "PAUSED(awaiting_retry)",
      "RESUMING",
      "RUNNING",
      "COMPLETED",
    ]);
    expect([c.count("before"), c.count("flaky"), c.count("after")]).toEqual([1, 3, 1]);
    const steps = await c.client.backend.loadSteps(runId);
    const flaky = steps.find((s) => s.name === "flaky");
    expect(flaky?.attempts.map((t) => t.error?.message ?? "ok")).toEqual(["flaky failure 1", "flaky failure 2", "ok"]);
    const waits = await c.client.waits(runId);
    expect(waits.map((w) => [w.id, w.resolution?.outcome])).toEqual([
      ["r2.2", "fired"],
      ["r2.3", "fired"],
    ]);
  });
});

describe("approvals across processes", () => {
  for (const workflow of ["approve", "approveOrFallback"] as const) {
    it(`${workflow}: an approval that expires while no process is alive cannot be approved; B ${
      workflow === "approve" ? "ends the run BLOCKED" : "runs the fallback"
    }`, async () => {
      const c = await setup();
      const { a, runId } = await c.startA(workflow, { expiresInMs: 2000 });
      await c.paused(runId, "awaiting_approval");
      await kill(a);
      const approval = await openWait(c.client, runId);
      await sleep(Math.max(0, (approval.dueAt as number) - Date.now()) + 50);

      const late = await refusal(c.client.approve(runId, approval.id, { by: "alice", digest: SHIP_DIGEST }));
      expect(late.why).toBe("expired");
      expect((await c.client.getRun(runId)).state).toBe("PAUSED");

      const end = await c.finishB(runId);
      if (workflow === "approve") {
        expect(end.state).toBe("BLOCKED");
        expect(end.error?.code).toBe("APPROVAL_EXPIRED");
        endsWith(await c.path(runId), "awaiting_approval", "BLOCKED");
        expect(c.count("after")).toBe(0);
      } else {
        expect(end).toMatchObject({ state: "COMPLETED", output: { shipped: false, fallback: "fallback" } });
        endsWith(await c.path(runId), "awaiting_approval");
        expect([c.count("fallback"), c.count("after")]).toEqual([1, 0]);
      }
      expect(c.count("before")).toBe(1);
      const [expired] = await c.client.waits(runId);
      expect(expired?.resolution?.outcome).toBe("expired");
      expect(expired?.resolution?.by).toBeUndefined();
      // Never approved, not even now.
      await expect(c.client.approve(runId, approval.id, { by: "alice", digest: SHIP_DIGEST })).rejects.toThrow(
        RunNotOpenError,
      );
    });
  }

  it("a wrong digest and an unlisted approver are refused and the run keeps waiting", async () => {
    const c = await setup();
    const { a, runId } = await c.startA("approve", { expiresInMs: 60_000 });
    await c.paused(runId, "awaiting_approval");
    await kill(a);
    const approval = await openWait(c.client, runId);

    const otherPayload = approvalDigest({ ...SHIP_PAYLOAD, amount: 421 });
    const wrong = await refusal(c.client.approve(runId, approval.id, { by: "alice", digest: otherPayload }));
    expect(wrong.why).toBe("wrong_digest");
    const outsider = await refusal(c.client.approve(runId, approval.id, { by: "mallory", digest: SHIP_DIGEST }));
    expect(outsider.why).toBe("not_an_approver");
    const deniedByOutsider = await refusal(c.client.deny(runId, approval.id, { by: "mallory", digest: SHIP_DIGEST }));
    expect(deniedByOutsider.why).toBe("not_an_approver");
    expect((await c.client.getRun(runId)).state).toBe("PAUSED");
    expect((await openWait(c.client, runId)).status).toBe("open");

    await c.client.approve(runId, approval.id, { by: "bob", digest: SHIP_DIGEST });
    const end = await c.finishB(runId);
    expect(end).toMatchObject({ state: "COMPLETED", output: { approvedBy: "bob" } });
    expect(await c.path(runId)).toEqual([
      "PENDING",
      "RUNNING",
      "PAUSED(awaiting_approval)",
      "RESUMING",
      "RUNNING",
      "COMPLETED",
    ]);
  });

  it("approve and deny at once from two processes: exactly one wins and the run ends by it", async () => {
    const c = await setup();
    const { a, runId } = await c.startA("approve", { expiresInMs: 60_000 });
    await c.paused(runId, "awaiting_approval");
    await kill(a);
    const approval = await openWait(c.client, runId);
    const approver = c.child("decide", runId, approval.id, "approve", "alice", SHIP_DIGEST);
    const denier = c.child("decide", runId, approval.id, "deny", "bob", SHIP_DIGEST);
    await waitFor("both deciders ready", () => approver.out().includes("ready") && denier.out().includes("ready"));
    approver.proc.stdin.write("go\n");
    denier.proc.stdin.write("go\n");
    const [approved, denied] = await Promise.all(
      [approver, denier].map(async (p) => {
        expect((await p.exited).code, p.err()).toBe(0);
        return JSON.parse(p.out().trim().split("\n").at(-1) ?? "{}") as { ok?: true; error?: string; code?: string };
      }),
    );
    const results = [approved, denied];
    expect(results.filter((r) => r?.ok)).toHaveLength(1);
    expect(results.filter((r) => r?.error)).toEqual([
      expect.objectContaining({ error: "WaitClosedError", code: "WAIT_CLOSED" }),
    ]);
    const approveWon = approved?.ok === true;
    const [decided] = await c.client.waits(runId);
    expect(decided?.resolution).toMatchObject(
      approveWon ? { outcome: "approved", by: { id: "alice" } } : { outcome: "denied", by: { id: "bob" } },
    );

    const end = await c.finishB(runId);
    if (approveWon) {
      expect(end).toMatchObject({ state: "COMPLETED", output: { approvedBy: "alice" } });
      endsWith(await c.path(runId), "awaiting_approval");
      expect(c.count("after")).toBe(1);
    } else {
      expect(end.state).toBe("BLOCKED");
      expect(end.error?.code).toBe("APPROVAL_DENIED");
      endsWith(await c.path(runId), "awaiting_approval", "BLOCKED");
      expect(c.count("after")).toBe(0);
    }
    expect(c.count("before")).toBe(1);
  });
});

describe("signals across processes", () => {
  it("a repeated message id is delivered once: m1, m1 again, m2 give the payloads of m1 and m2", async () => {
    const c = await setup();
    const { a, runId } = await c.startA("twice", null);
    await c.paused(runId, "awaiting_signal");
    await kill(a);

    expect(await c.client.signal(runId, "msg", { n: 1 }, { messageId: "m1" })).toMatchObject({
      duplicate: false,
      deliveredTo: "w2",
    });
    expect(await c.client.signal(runId, "msg", { n: 99 }, { messageId: "m1" })).toMatchObject({
      duplicate: true,
      deliveredTo: "w2",
      messageId: "m1",
    });
    // The second wait does not exist yet (the run has not been replayed): m2 waits in the inbox.
    expect(await c.client.signal(runId, "msg", { n: 2 }, { messageId: "m2" })).toMatchObject({
      duplicate: false,
      deliveredTo: null,
    });

    const end = await c.finishB(runId);
    expect(end).toMatchObject({ state: "COMPLETED", output: [{ n: 1 }, { n: 2 }] });
    // The second wait found m2 in the inbox and never paused.
    expect(await c.path(runId)).toEqual([
      "PENDING",
      "RUNNING",
      "PAUSED(awaiting_signal)",
      "RESUMING",
      "RUNNING",
      "COMPLETED",
    ]);
    const inbox = await c.client.backend.listSignals(runId);
    expect(inbox.map((s) => [s.messageId, s.payload, s.consumedBy])).toEqual([
      ["m1", { n: 1 }, "w2"],
      ["m2", { n: 2 }, "w3"],
    ]);
    expect(c.count("before")).toBe(1);
    // A late duplicate is still acknowledged as one.
    expect(await c.client.signal(runId, "msg", { n: 100 }, { messageId: "m2" })).toMatchObject({ duplicate: true });
  });

  it("a signal sent while a slow tool runs, before its wait exists, is received without a pause", async () => {
    const c = await setup();
    const { a, runId } = await c.startA("early", { ms: 2000 });
    await waitFor("the slow tool to start", () => existsSync(join(c.dir, "slow.started")), a);
    expect(await c.client.signal(runId, "go", "early bird", { messageId: "e1" })).toMatchObject({
      duplicate: false,
      deliveredTo: null,
    });
    expect((await a.exited).code, a.err()).toBe(0);
    const end = JSON.parse(a.out().trim().split("\n").at(-1) ?? "{}") as Ended;
    expect(end).toMatchObject({ state: "COMPLETED", output: { go: "early bird" } });
    expect(await c.path(runId)).toEqual(["PENDING", "RUNNING", "COMPLETED"]);
    const inbox = await c.client.backend.listSignals(runId);
    expect(inbox.map((s) => [s.messageId, s.consumedBy])).toEqual([["e1", "w2"]]);
    expect(c.count("slow")).toBe(1);
  });

  it("a signal sent before its wait exists survives a SIGKILL during the slow tool and is received by B", async () => {
    const c = await setup();
    const { a, runId } = await c.startA("early", { ms: 3000 });
    await waitFor("the slow tool to start", () => existsSync(join(c.dir, "slow.started")), a);
    await c.client.signal(runId, "go", "kept", { messageId: "k1" });
    await kill(a);
    expect(c.count("slow")).toBe(0);

    const end = await c.finishB(runId);
    expect(end).toMatchObject({ state: "COMPLETED", output: { go: "kept" } });
    expect(await c.path(runId)).toEqual(["PENDING", "RUNNING", "INTERRUPTED", "RESUMING", "RUNNING", "COMPLETED"]);
    const inbox = await c.client.backend.listSignals(runId);
    expect(inbox.map((s) => [s.messageId, s.consumedBy])).toEqual([["k1", "w2"]]);
    // The tool was in flight (no result saved) when A died: it ran again, once.
    expect(c.count("slow")).toBe(1);
    expect(c.count("slow.started")).toBe(2);
  });
});
