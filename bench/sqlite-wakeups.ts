/**
 * Signal -> RUNNING across processes on one SQLite file: runs parked on `ctx.waitForSignal` in a
 * worker process (a Runtime with its worker, default settings) are signalled one at a time from
 * this process (a client-only Runtime); the worker, woken by the file's doorbell, claims the run
 * and records RUNNING. Measured twice: each signal sent the moment the previous run ended
 * (back-to-back), and each after the worker sat idle for `--gap` ms (default 200): the case of a
 * worker waiting for work. Prints the mean, p50, p90, p99 and max of each, in ms from the call.
 * Timestamps cross processes as `performance.timeOrigin + performance.now()` (epoch ms, sub-ms).
 *
 *   npm run bench:sqlite-wakeups
 *   npm run bench:sqlite-wakeups -- --signals 200 --gap 200 --baseline ../cairn-before
 *
 * `--baseline <dir>` measures another checkout's dist/ the same way (its workers and client), for
 * a before/after in one run.
 */
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { printGrid, quantile } from "./report.ts";

const { values } = parseArgs({
  options: {
    signals: { type: "string", default: "100" },
    "warm-up": { type: "string", default: "10" },
    gap: { type: "string", default: "200" },
    baseline: { type: "string" },
    role: { type: "string" },
    db: { type: "string" },
    build: { type: "string" },
  },
});

const now = () => performance.timeOrigin + performance.now();

/** Cairn from this checkout (`cairn`), or another checkout's dist/. */
async function load(build: string | undefined) {
  if (!build) return { index: await import("cairn"), sqlite: await import("cairn/sqlite") };
  const at = (file: string) => pathToFileURL(resolve(build, "dist", file)).href;
  return {
    index: (await import(at("index.js"))) as typeof import("cairn"),
    sqlite: (await import(at("sqlite.js"))) as typeof import("cairn/sqlite"),
  };
}

function parkAgent({ index }: Awaited<ReturnType<typeof load>>) {
  return index.defineAgent({
    name: "wakebench",
    tools: {},
    workflows: {
      async park(ctx, _input: { i: number }) {
        return (await ctx.waitForSignal<{ ok: boolean }>("go")).ok;
      },
    },
  });
}

/** The worker process: reports each RESUMING -> RUNNING with its time. */
async function workerRole(): Promise<void> {
  const build = await load(values.build);
  const runtime = new build.index.Runtime({
    agents: [parkAgent(build)],
    backend: new build.sqlite.SqliteBackend({ path: values.db ?? "" }),
    logger: build.index.silentLogger,
  });
  runtime.onTransition((t) => {
    if (t.to === "RUNNING" && t.from === "RESUMING") process.send?.({ kind: "running", id: t.runId, at: now() });
  });
  await runtime.start();
  // When the worker's process heard of the run (a build without wake-ups never does).
  const backend = runtime.backend as {
    subscribe?: (l: (w: { kind: string; runId?: string }) => void) => Promise<unknown>;
  };
  await backend.subscribe?.((w) => {
    if (w.kind === "runnable") process.send?.({ kind: "heard", id: w.runId, at: now() });
  });
  process.on("message", (m: { kind: string }) => {
    if (m.kind === "clock") process.send?.({ kind: "clock", at: now() });
    if (m.kind === "stop") void runtime.shutdown().then(() => process.exit(0));
  });
  process.send?.({ kind: "ready" });
}

/** ms from the signal call: its return in the client, the wake-up heard by the worker, RUNNING. */
interface Sample {
  returned: number;
  heard: number;
  running: number;
}

interface Latencies {
  backToBack: Sample[];
  idle: Sample[];
}

/** Parks runs in a worker process on a fresh file, then signals them from here. */
async function measure(build: string | undefined, dir: string, label: string): Promise<Latencies> {
  const cairn = await load(build);
  const db = join(dir, `${label}.db`);
  const agent = parkAgent(cairn);
  const client = new cairn.index.Runtime({
    agents: [agent],
    backend: new cairn.sqlite.SqliteBackend({ path: db }),
    logger: cairn.index.silentLogger,
    worker: false,
  });
  await client.start();
  const args = ["--role", "worker", "--db", db, ...(build ? ["--build", build] : [])];
  const worker = fork(fileURLToPath(import.meta.url), args, { execArgv: ["--import", "tsx"], stdio: "inherit" });
  const waiters = new Map<string, (at: number) => void>();
  const heard = new Map<string, number>();
  let clockReply: ((at: number) => void) | undefined;
  const ready = new Promise<void>((r) =>
    worker.on("message", (m: { kind: string; id?: string; at?: number }) => {
      if (m.kind === "ready") r();
      if (m.kind === "clock") clockReply?.(m.at ?? Number.NaN);
      if (m.kind === "heard" && !heard.has(m.id ?? "")) heard.set(m.id ?? "", m.at ?? Number.NaN);
      if (m.kind === "running") waiters.get(m.id ?? "")?.(m.at ?? Number.NaN);
    }),
  );
  try {
    await ready;
    // The worker's clock minus this one's (timeOrigin differs by a few ms between processes),
    // from the quickest of 20 round trips; subtracted from the worker's times.
    let clock = { offset: Number.NaN, rtt: Number.POSITIVE_INFINITY };
    for (let i = 0; i < 20; i++) {
      const t0 = now();
      const reply = new Promise<number>((r) => {
        clockReply = r;
      });
      worker.send({ kind: "clock" });
      const at = await reply;
      const t1 = now();
      if (t1 - t0 < clock.rtt) clock = { offset: at - (t0 + t1) / 2, rtt: t1 - t0 };
    }
    offsets.push(`${label}: ${(clock.offset * 1000).toFixed(0)} µs (rtt ${(clock.rtt * 1000).toFixed(0)} µs)`);
    const warmUp = Number(values["warm-up"]);
    const count = Number(values.signals);
    const total = 2 * (count + warmUp);
    const ids: string[] = [];
    for (let i = 0; i < total; i++) ids.push((await client.run(agent, "park", { i })).id);
    for (;;) {
      const paused = await client.listRuns({ state: "PAUSED", workflow: "park", limit: total });
      if (paused.length === total) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const out: Latencies = { backToBack: [], idle: [] };
    for (const [n, id] of ids.entries()) {
      const idle = n >= total / 2;
      const k = idle ? n - total / 2 : n;
      if (idle) await new Promise((r) => setTimeout(r, Number(values.gap)));
      const running = new Promise<number>((r) => waiters.set(id, r));
      heard.delete(id);
      const t0 = now();
      await client.signal(id, "go", { ok: true });
      const returned = now() - t0;
      const at = await running;
      waiters.delete(id);
      await client.waitFor(id, { timeoutMs: 30_000 });
      const sample = {
        returned,
        heard: (heard.get(id) ?? Number.NaN) - clock.offset - t0,
        running: at - clock.offset - t0,
      };
      if (k >= warmUp) (idle ? out.idle : out.backToBack).push(sample);
    }
    return out;
  } finally {
    worker.send({ kind: "stop" });
    await new Promise((r) => worker.once("exit", r));
    await client.shutdown();
  }
}

/** The clock offsets measured, printed under the table. */
const offsets: string[] = [];

const PARTS = {
  returned: "signal returned (client)",
  heard: "wake-up heard (worker)",
  running: "RUNNING recorded (worker)",
} as const;

if (values.role === "worker") {
  await workerRole();
} else {
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-wakeups-"));
  const systems: [string, string | undefined][] = [["cairn", undefined]];
  if (values.baseline) systems.push([`before (${values.baseline})`, values.baseline]);
  const results: [string, Latencies][] = [];
  for (const [label, build] of systems) {
    process.stderr.write(`${label}\n`);
    results.push([label, await measure(build, dir, label.replace(/\W+/g, "-"))]);
  }
  rmSync(dir, { recursive: true, force: true });
  console.log(
    `\nSQLite signal -> RUNNING across processes: ${values.signals} signals each way (after ${values["warm-up"]} not measured);` +
      ` node ${process.version}, ${cpus().length} cores, load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}\n`,
  );
  const f = (v: number) => (Number.isNaN(v) ? "–" : v.toFixed(2));
  const lines: string[][] = [];
  for (const [label, l] of results) {
    for (const [how, samples] of [
      ["back-to-back", l.backToBack],
      [`worker idle ${values.gap} ms first`, l.idle],
    ] as const) {
      for (const part of ["returned", "heard", "running"] as const) {
        const ms = samples.map((s) => s[part]);
        const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
        lines.push([
          `${label}, ${how}: ${PARTS[part]}`,
          f(mean),
          ...[0.5, 0.9, 0.99, 1].map((q) => f(quantile(ms, q))),
        ]);
      }
    }
  }
  printGrid(["ms from the runtime.signal call", "mean", "p50", "p90", "p99", "max"], lines);
  console.log(`\nworker clock minus this process's, subtracted: ${offsets.join("; ")}`);
  const idleP50 = quantile(
    (results[0]?.[1].idle ?? []).map((s) => s.running),
    0.5,
  );
  console.log(
    `\ngoal: p50 signal -> RUNNING across processes, idle worker, under 10 ms: ${f(idleP50)} ms${idleP50 < 10 ? " (met)" : " MISSED"}`,
  );
}
