import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterEach } from "vitest";
import {
  type LegacyLogger,
  type RunRecord,
  Runtime,
  type RuntimeBackend,
  type TransitionRecord,
} from "../../src/index.ts";
import { RECOVERED_PATH } from "../helpers/paths.ts";
import type { TestDatabase } from "../helpers/postgres.ts";
import { fencingAgent } from "./fencing-agent.ts";

/**
 * What the fencing tests share: worker A as a child process (`fencing-child.ts`), waiting on what
 * it prints, on the file of tool executions and on the kernel's view of it (stopped or not).
 */

const CHILD = join(import.meta.dirname, "fencing-child.ts");

export interface Child {
  proc: ChildProcessWithoutNullStreams;
  lines: () => string[];
  err: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const children: Child[] = [];
afterEach(() => {
  // A child left behind by a failed test (possibly still frozen): wake it and kill it.
  for (const child of children.splice(0)) {
    if (child.proc.exitCode === null && child.proc.signalCode === null) {
      child.proc.kill("SIGCONT");
      child.proc.kill("SIGKILL");
    }
  }
});

/** Starts worker A with `args` (see `fencing-child.ts`); killed after the test if still there. */
export function startChild(args: string[]): Child {
  const proc = spawn(process.execPath, ["--import", "tsx", CHILD, ...args]);
  let out = "";
  let err = "";
  proc.stdout.on("data", (d) => (out += d));
  proc.stderr.on("data", (d) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on("close", (code, signal) => resolve({ code, signal })),
  );
  const child = { proc, lines: () => out.split("\n").filter(Boolean), err: () => err, exited };
  children.push(child);
  return child;
}

/** Polls `check` every 5 ms until it gives a value; fails after 15 s naming `what`. */
export async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The child's lines `<prefix> <json>`, parsed. */
export function records<T>(child: Child, prefix: string): T[] {
  return child
    .lines()
    .filter((l) => l.startsWith(`${prefix} `))
    .map((l) => JSON.parse(l.slice(prefix.length + 1)) as T);
}

export interface Execution {
  seq: number;
  pid: number;
  phase: "start" | "end";
}

export function executions(file: string): Execution[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [seq, pid, phase] = line.split(":");
      return { seq: Number(seq), pid: Number(pid), phase: phase as Execution["phase"] };
    });
}

export const ran = (file: string, seq: number, pid: number, phase: Execution["phase"]) =>
  executions(file).some((e) => e.seq === seq && e.pid === pid && e.phase === phase);

/** Whether the kernel reports the process stopped (state T); where /proc is missing, waits a little. */
export async function stopped(pid: number): Promise<boolean> {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) {
    await sleep(50);
    return true;
  }
  const text = readFileSync(stat, "utf8");
  return text.slice(text.lastIndexOf(")") + 2).startsWith("T");
}

/** A `write` line of the child: one `saveSteps` or `transition` and its outcome. */
export interface Write {
  op: "saveSteps" | "transition";
  seqs?: number[];
  epoch?: number;
  to?: string;
  at: number;
  outcome: string;
  message?: string;
}

/** The child's `started` line. */
export interface StartedLine {
  runId: string;
  workerId: string;
  pid: number;
}

/** A transition log, one line per transition, for the test's output. */
export function transitionLog(transitions: readonly TransitionRecord[]): string {
  return transitions
    .map((t) => `  ${t.id} ${t.from ?? "-"} -> ${t.to}  by ${t.actor.kind} ${t.actor.id}: ${t.reason}`)
    .join("\n");
}

/** Resolves once the run's lease, as `inspector` reads it, has lapsed. */
export function leaseLapsed(inspector: RuntimeBackend, runId: string): Promise<true> {
  return until("A's lease lapsed", async () => {
    const run = (await inspector.getRun(runId)) as RunRecord;
    return run.leaseExpiresAt !== null && run.leaseExpiresAt < Date.now();
  });
}

/**
 * Worker B: a started runtime in the test process on `backend`, sweeping every 50 ms, with a lease
 * long enough not to lapse during the test; what it logs at warn and error goes to `log`.
 */
export async function startWorkerB(execFile: string, backend: RuntimeBackend, log: string[]): Promise<Runtime> {
  const logger: LegacyLogger = {
    debug() {},
    info() {},
    warn: (message, fields) => log.push(`warn ${message} ${JSON.stringify(fields ?? {})}`),
    error: (message, fields) => log.push(`error ${message} ${JSON.stringify(fields ?? {})}`),
  };
  const b = new Runtime({
    agents: [fencingAgent(execFile)],
    backend,
    logger,
    worker: { leaseMs: 5000, pollIntervalMs: 50, detectDeadLocalOwners: false },
  });
  await b.start();
  return b;
}

/** The run once it has ended, waiting past INTERRUPTED (a takeover, whose recovery follows). */
export async function ended(runtime: Runtime, runId: string): Promise<RunRecord> {
  let run = await runtime.waitFor(runId, { timeoutMs: 15_000, pollIntervalMs: 50 });
  while (run.state === "INTERRUPTED") run = await runtime.waitFor(runId, { timeoutMs: 15_000, pollIntervalMs: 50 });
  return run;
}

/** The transitions (`from>to`) of a run A claimed and B took over and finished. */
export const TAKEN_OVER = RECOVERED_PATH;

/** Whether another connection can lock the run's row in `schema` now (no transaction holds it). */
export async function rowUnlocked(db: TestDatabase, schema: string, runId: string): Promise<boolean> {
  try {
    await db.query(`SELECT 1 FROM ${pg.escapeIdentifier(schema)}.runs WHERE id = $1 FOR UPDATE NOWAIT`, [runId]);
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === "55P03") return false;
    throw error;
  }
}
