/**
 * What a paused run costs, and how fast a signal brings it back. On SQLite (a temp file, default
 * durability "machine"), with the worker in the same process:
 *
 * 1. Heap: parks N runs (default 10,000), each after two tool steps, on `ctx.waitForSignal`, and
 *    prints the heap used (after a forced gc) before and after, with the time parking took. It
 *    first checks in the database that every run is PAUSED (awaiting_signal) and that no run holds
 *    a lease, and counts the executions still reachable (a FinalizationRegistry on each execution's
 *    `ctx` and on its input, which the envelope's run record holds): a paused run's envelope must
 *    have left memory. Runtime does not expose its worker's active runs; this is what stands in.
 * 2. Latency: signals M of the parked runs (default 1,000), one at a time, and prints the time from
 *    calling `runtime.signal` to the run's RUNNING transition and to COMPLETED, with where it goes:
 *    the time spent in each backend call (a timing subclass of SqliteBackend) and between them.
 *
 * Also prints the machine and the bare cost of one synchronous SQLite commit (the fsync every
 * durable write pays), as bench/step-overhead.ts does. Figures only, no assertions.
 *
 *   npm run bench:paused                          # builds dist/, 10,000 parked, 1,000 signalled
 *   npm run bench:paused -- --runs 2000 --signals 500 --concurrency 64
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import { defineAgent, defineTool, Runtime, silentLogger } from "cairn";
import { SqliteBackend } from "cairn/sqlite";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "10000" },
    signals: { type: "string", default: "1000" },
    concurrency: { type: "string", default: "64" },
  },
});
const RUNS = Number(values.runs);
const SIGNALS = Math.min(Number(values.signals), RUNS);
const CONCURRENCY = Number(values.concurrency);
const WARM_UP = 200;

const collectGarbage = (globalThis as { gc?: () => void }).gc;
if (!collectGarbage) {
  console.error("run with node --expose-gc (npm run bench:paused does): the heap figures need a forced gc");
  process.exit(1);
}

/** A full gc, three times, with a turn between for the finalizers each schedules; then the heap used. */
async function heapAfterGc(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    collectGarbage?.();
    await new Promise((r) => setTimeout(r, 10));
  }
  return process.memoryUsage().heapUsed;
}

/**
 * Objects of an execution not yet collected, by what they show: a `ctx` is alive while its
 * workflow's frame is (it also reaches its envelope); an execution's `input` object is the one in
 * the run record the envelope and the worker's active run hold, so it is alive while they are.
 */
const live = { ctx: 0, input: 0 };
const executions = new FinalizationRegistry<"ctx" | "input">((what) => {
  live[what]--;
});

const agent = defineAgent({
  name: "parked",
  tools: {
    lookup: defineTool({ run: (_ctx, { i }: { i: number }) => ({ customer: `c${i}`, tier: i % 3 }) }),
    score: defineTool({ run: (_ctx, { tier }: { tier: number }) => tier * 10 }),
  },
  workflows: {
    async park(ctx, input: { i: number }) {
      const { i } = input;
      live.ctx++;
      live.input++;
      executions.register(ctx, "ctx");
      executions.register(input, "input");
      const found = await ctx.tool("lookup", { i });
      const score = await ctx.tool("score", { tier: found.tier });
      const go = await ctx.waitForSignal<{ ok: boolean }>("go");
      return { customer: found.customer, score, ok: go.ok };
    },
  },
});

/** The SQLite backend with the time spent in each call recorded while `timing` is on. */
class TimedSqlite extends SqliteBackend {
  timing = false;
  readonly spent = new Map<string, { n: number; ms: number }>();
  record(label: string, ms: number): void {
    const entry = this.spent.get(label) ?? { n: 0, ms: 0 };
    entry.n++;
    entry.ms += ms;
    this.spent.set(label, entry);
  }
  static {
    for (const name of [
      "createRun",
      "getRun",
      "deliverSignal",
      "claimRun",
      "transition",
      "listTransitions",
      "loadSteps",
      "loadWaits",
      "saveSteps",
      "suspend",
      "listExpiredLeases",
      "listRecoverable",
      "fireDueWaits",
      "nextDueAt",
    ] as const) {
      const original = SqliteBackend.prototype[name] as (...args: unknown[]) => Promise<unknown>;
      Object.defineProperty(TimedSqlite.prototype, name, {
        value: function (this: TimedSqlite, ...args: unknown[]) {
          if (!this.timing) return original.apply(this, args);
          // The work of these methods is synchronous (better-sqlite3): timed up to the promise.
          const t0 = performance.now();
          const result = original.apply(this, args);
          const spent = performance.now() - t0;
          if (name === "claimRun") {
            void result.then(
              (run) => this.record(run ? "claimRun (a run)" : "claimRun (none)", spent),
              () => this.record("claimRun (error)", spent),
            );
          } else if (name === "saveSteps") {
            this.record((args[1] as { sync: boolean }).sync ? "saveSteps (sync)" : "saveSteps (no sync)", spent);
          } else if (name === "transition") {
            this.record(`transition → ${(args[0] as { to: string }).to}`, spent);
          } else {
            this.record(name, spent);
          }
          return result;
        },
      });
    }
  }
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
const ms = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
const n = (v: number) => Math.round(v).toLocaleString("en-US");

const dir = mkdtempSync(join(tmpdir(), "cairn-paused-"));

/** One bare synchronous commit (WAL, synchronous=FULL) in `dir`: the fsync floor. */
function bareCommits(count: number): string {
  const db = new Database(join(dir, `bare-${Math.random().toString(36).slice(2)}.db`));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
  const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
  const commit = db.transaction((v: string) => insert.run(v));
  for (let i = 0; i < 2500; i++) commit(`{"seq":${i}}`);
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    commit(`{"seq":${i}}`);
    out.push((performance.now() - t0) * 1000);
  }
  db.close();
  out.sort((a, b) => a - b);
  const load = loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
  return `bare commit, synchronous=FULL (the fsync floor): p50 ${ms(quantile(out, 0.5))} µs, p90 ${ms(quantile(out, 0.9))} µs, p99 ${ms(quantile(out, 0.99))} µs (load average ${load})`;
}

interface Cycle {
  resuming: number;
  returned: number;
  running: number;
  completed: number;
  /** RUNNING was recorded before the next event-loop turn after `runtime.signal` returned. */
  sameTurn: boolean;
}

/** A runtime on its own SQLite file, with what the bench watches of it. */
async function open(durability: "process" | "machine" | undefined, file: string) {
  const path = join(dir, file);
  // durability undefined: the default, to report what it is.
  const backend = new TimedSqlite(durability ? { path, durability } : { path });
  const runtime = new Runtime({ agents: [agent], backend, logger: silentLogger, worker: { concurrency: CONCURRENCY } });
  let paused = 0;
  let onPaused: (() => void) | undefined;
  const watched = new Map<string, Partial<Cycle> & { done: () => void }>();
  runtime.onTransition((t, run) => {
    if (t.to === "PAUSED") {
      paused++;
      onPaused?.();
    }
    const w = watched.get(run.id);
    if (!w) return;
    const now = performance.now();
    if (t.to === "RESUMING") w.resuming ??= now;
    if (t.to === "RUNNING") w.running ??= now;
    if (t.to === "COMPLETED" || t.to === "FAILED") {
      w.completed ??= now;
      w.done();
    }
  });
  await runtime.start();

  /** Starts `count` runs one after the other and resolves once all of them have paused. */
  async function park(count: number, offset: number): Promise<void> {
    const target = paused + count;
    const all = new Promise<void>((resolve) => {
      onPaused = () => {
        if (paused >= target) resolve();
      };
    });
    const guard = setInterval(
      () => process.stderr.write(`  ${n(count - (target - paused))}/${n(count)} paused\n`),
      10_000,
    );
    for (let i = 0; i < count; i++) await runtime.run(agent, "park", { i: offset + i });
    await all;
    clearInterval(guard);
    onPaused = undefined;
  }

  /** Signals `ids` one at a time: ms from calling `runtime.signal` to each transition. */
  async function signalEach(ids: string[]): Promise<Cycle[]> {
    const out: Cycle[] = [];
    for (const id of ids) {
      let done!: () => void;
      const finished = new Promise<void>((r) => (done = r));
      const w: Partial<Cycle> & { done: () => void } = { done };
      watched.set(id, w);
      const t0 = performance.now();
      await runtime.signal(id, "go", { ok: true }, { messageId: `go-${id}` });
      const returned = performance.now() - t0;
      // Was RUNNING recorded in the event-loop turn of the signal, without a timer or poll?
      await new Promise((r) => setImmediate(r));
      const sameTurn = w.running !== undefined;
      await finished;
      watched.delete(id);
      out.push({
        resuming: (w.resuming ?? Number.NaN) - t0,
        returned,
        running: (w.running ?? Number.NaN) - t0,
        completed: (w.completed ?? Number.NaN) - t0,
        sameTurn,
      });
    }
    return out;
  }

  /** Parks and signals `count` runs, so the JIT and statement caches are warm; not measured. */
  async function warmUp(count: number): Promise<void> {
    await park(count, -count);
    const ids = (await runtime.listRuns({ state: "PAUSED", limit: count })).map((r) => r.id);
    await signalEach(ids);
  }

  /** Signals up to `count` parked runs one at a time, with the backend's calls timed. */
  async function latency(count: number): Promise<Cycle[]> {
    const ids = (await runtime.listRuns({ state: "PAUSED", workflow: "park", limit: count })).map((r) => r.id);
    backend.spent.clear();
    backend.timing = true;
    const cycles = await signalEach(ids);
    backend.timing = false;
    return cycles;
  }

  return { path, backend, runtime, park, warmUp, latency };
}

function printLatency(title: string, cycles: Cycle[], backend: TimedSqlite, goal: boolean): void {
  const sorted = (pick: (c: Cycle) => number) => cycles.map(pick).sort((a, b) => a - b);
  const row = (label: string, values: number[]) =>
    console.log(
      `   ${label.padEnd(36)}${[0.5, 0.9, 0.99, 1].map((q) => ms(quantile(values, q)).padStart(8)).join("")}`,
    );
  const running = sorted((c) => c.running);
  console.log(title);
  console.log(
    `   ${"ms from calling runtime.signal".padEnd(36)}${["p50", "p90", "p99", "max"].map((h) => h.padStart(8)).join("")}`,
  );
  row(
    "RESUMING recorded (signal stored)",
    sorted((c) => c.resuming),
  );
  row("RUNNING recorded (claimed, started)", running);
  row(
    "runtime.signal returned",
    sorted((c) => c.returned),
  );
  row(
    "COMPLETED (replayed, finished)",
    sorted((c) => c.completed),
  );
  const sameTurn = cycles.filter((c) => c.sameTurn).length;
  console.log(
    `   RUNNING recorded in the event-loop turn of the signal (no poll, no timer) for ${n(sameTurn)} of ${n(cycles.length)}:` +
      " the in-process signal pokes the worker, which claims at once",
  );
  if (goal) {
    console.log(
      `   goal: p50 signal -> RUNNING under 5 ms on SQLite in one process: ${quantile(running, 0.5) < 5 ? "met" : "MISSED"}`,
    );
  }
  const total = cycles.reduce((a, c) => a + c.completed, 0);
  const inBackend = [...backend.spent.values()].reduce((a, e) => a + e.ms, 0);
  console.log(
    `   where a signal-to-COMPLETED cycle goes (mean per signal; backend calls are synchronous, timed in place):`,
  );
  for (const [name, e] of [...backend.spent.entries()].sort((a, b) => b[1].ms - a[1].ms)) {
    console.log(
      `     ${name.padEnd(22)} ${(e.n / cycles.length).toFixed(2).padStart(5)} calls ${ms((e.ms / cycles.length) * 1000).padStart(7)} µs`,
    );
  }
  console.log(
    `     ${"outside the backend".padEnd(22)} ${"".padStart(5)}       ${ms(((total - inBackend) / cycles.length) * 1000).padStart(7)} µs` +
      ` (Cairn, replay, event loop); ${ms((total / cycles.length) * 1000)} µs in all\n`,
  );
}

const cpu = cpus();
console.log(
  `machine: ${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores, node ${process.version}; files in ${dir}`,
);
console.log(bareCommits(1000));

// 1. Heap before and after parking RUNS runs, on the default durability.
const main = await open(undefined, "paused.db");
console.log(
  `SQLite, durability "${main.backend.durability}" (the default); worker concurrency ${CONCURRENCY}, poll interval 500 ms (default)\n`,
);
await main.warmUp(WARM_UP);
const reader = new Database(main.path, { readonly: true });
const count = <T>(sql: string) => reader.prepare<[], T>(sql).pluck().get() as T;
const heapIdle = await heapAfterGc();
const heapBefore = await heapAfterGc(); // and the same again with nothing done between: the noise
const t0 = performance.now();
main.backend.spent.clear();
main.backend.timing = true; // a Map of a dozen entries: nothing that grows with the runs
await main.park(RUNS, 0);
main.backend.timing = false;
const parkMs = performance.now() - t0;
const states = reader
  .prepare<[], { state: string; reason: string | null; count: number }>(
    "SELECT state, paused_reason AS reason, count(*) AS count FROM runs WHERE workflow = 'park' GROUP BY 1, 2",
  )
  .all();
const leased = count<number>("SELECT count(*) FROM runs WHERE lease_owner IS NOT NULL");
const openWaits = count<number>("SELECT count(*) FROM waits WHERE status = 'open' AND kind = 'signal'");
const listed = (await main.runtime.listRuns({ state: "PAUSED", workflow: "park", limit: RUNS + 1 })).length;
const heapAfter = await heapAfterGc();
const { ctx: contextsLeft, input: inputsLeft } = live;
const pausedInDb = states.find((s) => s.state === "PAUSED" && s.reason === "awaiting_signal")?.count ?? 0;
const growth = heapAfter - heapBefore;
reader.close();

console.log(`1. ${n(RUNS)} runs parked on ctx.waitForSignal, each after 2 tool steps`);
console.log(
  `   parking took ${(parkMs / 1000).toFixed(1)} s: ${n(RUNS / (parkMs / 1000))} runs/s (start, claim, 2 steps, pause)`,
);
const parkSpent = [...main.backend.spent.entries()].sort((a, b) => b[1].ms - a[1].ms);
const parkInBackend = parkSpent.reduce((a, [, e]) => a + e.ms, 0);
console.log(
  `   per parked run, ${ms((parkInBackend / RUNS) * 1000)} µs of ${ms((parkMs / RUNS) * 1000)} µs in backend calls: ` +
    parkSpent
      .filter(([, e]) => e.n >= RUNS / 2)
      .map(([name, e]) => `${name} ${(e.n / RUNS).toFixed(1)}× ${ms((e.ms / RUNS) * 1000)} µs`)
      .join(", "),
);
console.log(
  `   runs in the database: ${states.map((s) => `${n(s.count)} ${s.state}${s.reason ? ` (${s.reason})` : ""}`).join(", ")}` +
    ` (the ${n(WARM_UP)} COMPLETED are the warm-up); listRuns PAUSED: ${n(listed)}`,
);
console.log(`   open signal waits: ${n(openWaits)}; runs holding a lease: ${n(leased)}`);
console.log(
  `   still in memory after gc, of ${n(RUNS + WARM_UP * 2)} executions: ${n(inputsLeft)} run records (envelope or` +
    ` worker held), ${n(contextsLeft)} workflow contexts (a FinalizationRegistry on each execution's input and ctx)`,
);
console.log(
  `   heap used after gc: before ${mb(heapBefore)} MB, after ${mb(heapAfter)} MB; growth ${mb(growth)} MB,` +
    ` ${n(growth / RUNS)} bytes per paused run (two gcs with nothing between differ by ${mb(Math.abs(heapBefore - heapIdle))} MB)`,
);
console.log(
  `   goal: under 10 MB growth for ${n(RUNS)} paused runs (a paused run holds no compute): ${growth < 10 * 1024 * 1024 ? "met" : "MISSED"}`,
);
console.log(
  `   (rss ${mb(process.memoryUsage().rss)} MB, with SQLite's page cache; database ${mb(statSync(main.path).size)} MB + WAL)`,
);
if (pausedInDb !== RUNS || listed !== RUNS || contextsLeft !== 0 || inputsLeft !== 0 || leased !== 0) {
  console.log("   NOTE: not every run is paused and released; the heap figure above is not of paused runs only");
}
console.log();

// 2. Latency of signal -> RUNNING -> COMPLETED, one run at a time, among the parked runs.
const cycles = await main.latency(SIGNALS);
printLatency(
  `2. signal -> RUNNING again: ${n(cycles.length)} of the parked runs signalled one at a time, durability "${main.backend.durability}"`,
  cycles,
  main.backend,
  true,
);
await main.runtime.shutdown();

// The same with durability "process" (nothing fsynced on commit): what is left without the fsyncs.
const quick = await open("process", "paused-process.db");
await quick.warmUp(WARM_UP);
await quick.park(SIGNALS, 0);
printLatency(
  `   the same with durability "process" (no fsync on commit), ${n(SIGNALS)} runs parked and signalled:`,
  await quick.latency(SIGNALS),
  quick.backend,
  false,
);
await quick.runtime.shutdown();
console.log(bareCommits(1000).replace("bare commit", "bare commit again, at the end"));
rmSync(dir, { recursive: true, force: true });
