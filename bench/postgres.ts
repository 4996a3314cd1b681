/**
 * Cairn on PostgreSQL beside DBOS Transact and LangGraph.js (PostgresSaver), on one server, each
 * system in a database of its own that this bench creates and drops (Cairn's configurations in
 * schemas of their own in its database). Prints the machine and the server's settings, then:
 *
 * 1. Sequential: one run of N trivial steps (default 1,000) per system and round: the bare cost of
 *    one synchronous commit of a small row (in this process), Cairn's PostgresBackend with
 *    durability "machine" (and "process"), DBOS and LangGraph, each in a child process of its own
 *    (so that no system runs on a JIT and a heap another one shaped), each once per round in turn
 *    (default 3 rounds, after a warm-up run of 5,000 steps, so that each is measured as the
 *    long-running process it would be in production, not while V8 still compiles it) so that
 *    what else the shared server does falls on all of them; µs per step (median round) and
 *    p50/p90/p99, with the CPU the system's process and its server backends spent per step.
 * 2. Concurrent: R runs × S steps (default 50 × 20) started together; runs/s and steps/s. Cairn
 *    with 1, 2 and 4 worker processes (child Node processes, each a Runtime with a worker on the
 *    same schema; a client-only Runtime in another child starts the runs and waits until every run
 *    is COMPLETED); DBOS and LangGraph each in a child process of its own, started together as their
 *    APIs allow.
 *    Median of 10 batches after 5 warm-up batches (on a small machine one batch differs from the next
 *    by ±25 %), the systems' batches interleaved (each one's first, then each one's second, …) so
 *    that a noisy moment falls on all of them; with the CPU each batch took and where. Every child
 *    process runs with V8's memory reducer off (`childV8Flags`: interleaving idles each process
 *    for seconds between its batches, which a process under steady load never does).
 * 3. Signal latency across processes: runs parked on `ctx.waitForSignal` in a worker process are
 *    signalled one at a time from this process (a client-only Runtime); the worker, woken over
 *    LISTEN/NOTIFY, records RUNNING. DBOS the same way: workflows in `DBOS.recv` in this process,
 *    `DBOSClient.send` from a child process.
 *
 * The peers live in bench/peers/ (postgres-peers.ts), a separate package, so that they never
 * become dependencies of cairn; without it installed, `--skip-peers` measures Cairn alone.
 * Timestamps that cross processes are `performance.timeOrigin + performance.now()` (epoch ms,
 * sub-ms); the offset between the processes' clocks is estimated and printed.
 *
 *   npm run bench:postgres                    # installs bench/peers, builds dist/, everything
 *   npm run bench:postgres -- --skip-peers    # Cairn and the bare commit only
 *   npm run bench:postgres -- --rounds 5 --batches 5 --signals 500 --workers 1,2,4,8 --pool 20
 *   CAIRN_BENCH_PG_URL=postgresql://user@host:5432/postgres npm run bench:postgres
 *   CAIRN_BENCH_CHILD_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" npm run bench:postgres   # profile the workers
 */
import { type ChildProcess, execFileSync, fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { defineAgent, defineTool, Runtime, silentLogger } from "cairn";
import { PostgresBackend } from "cairn/postgres";
import pg from "pg";
import type { DbosPeer, PostgresPeers } from "./peers/postgres-peer-types.ts";

const { values } = parseArgs({
  options: {
    role: { type: "string", default: "main" },
    url: { type: "string" },
    schema: { type: "string" },
    index: { type: "string", default: "0" },
    concurrency: { type: "string" },
    pool: { type: "string", default: "10" },
    steps: { type: "string", default: "1000" },
    rounds: { type: "string", default: "3" },
    "warm-up": { type: "string", default: "5000" },
    runs: { type: "string", default: "50" },
    "run-steps": { type: "string", default: "20" },
    workers: { type: "string", default: "1,2,4" },
    batches: { type: "string", default: "10" },
    "warm-up-batches": { type: "string", default: "5" },
    signals: { type: "string", default: "200" },
    "skip-peers": { type: "boolean", default: false },
    system: { type: "string" },
  },
});

const SERVER_URL = process.env.CAIRN_BENCH_PG_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
/** The pool size of each Cairn backend (its default is 10, as DBOS's and pg's). */
const POOL = Number(values.pool);

/** Milliseconds on a clock the processes of this machine share (epoch-based, sub-ms). */
const now = () => performance.timeOrigin + performance.now();

// ---------------------------------------------------------------------------------------------
// The agent, in every process

/** Per-step gaps (µs), recorded only while a measured sequential run has set it. */
let gaps: number[] | undefined;
/** In a worker process: called when a parked run's workflow code got past its signal. */
let onResumed: ((runId: string, at: number) => void) | undefined;

const bench = defineAgent({
  name: "pgbench",
  tools: { noop: defineTool({ run: (_ctx, { i }: { i: number }) => i }) },
  workflows: {
    async steps(ctx, { n }: { n: number }) {
      let sum = 0;
      let last = performance.now();
      for (let i = 0; i < n; i++) {
        sum += await ctx.tool("noop", { i });
        const t = performance.now();
        gaps?.push((t - last) * 1000);
        last = t;
      }
      return sum;
    },
    async park(ctx, _input: { i: number }) {
      const go = await ctx.waitForSignal<{ ok: boolean }>("go");
      onResumed?.(ctx.runId, now());
      return go.ok;
    },
  },
});

// ---------------------------------------------------------------------------------------------
// Messages between the processes

type ToParent =
  | { kind: "ready" }
  | { kind: "clock"; at: number }
  | { kind: "running"; id: string; at: number }
  | { kind: "resumed"; id: string; at: number }
  /** The runs a worker recorded COMPLETED in one turn of its event loop, one message for them all. */
  | { kind: "completed"; runs: { id: string; at: number }[]; worker: number }
  | { kind: "sent"; id: string; calledAt: number; returnedAt: number }
  | { kind: "cpu"; ms: number }
  | { kind: "system"; label: string }
  | { kind: "steps"; us: number[]; cpuUs: number }
  | { kind: "batch"; ms: number; startedAt: number }
  | { kind: "error"; message: string };
type ToChild =
  | { kind: "clock" }
  | { kind: "cpu" }
  | { kind: "stop" }
  | { kind: "send"; id: string }
  | { kind: "steps"; steps: number }
  | { kind: "batch" };

/** CPU time this process has used, ms. */
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

const send = (message: ToParent) => process.send?.(message);

// pg-pool inside DBOS's pool calls client.query while a query runs (pg deprecates that for pg 9):
// not something this bench does, and a line in the middle of its tables. Other warnings print.
process.removeAllListeners("warning");
process.on("warning", (warning) => {
  if (warning.message.startsWith("Calling client.query() when the client is already executing a query")) return;
  console.error(`${warning.name}: ${warning.message}`);
});

/** A worker process: a Runtime with a worker on `--url`/`--schema`, reporting what it records. */
async function workerRole(): Promise<void> {
  const index = Number(values.index);
  const backend = new PostgresBackend({ connectionString: values.url ?? "", schema: values.schema ?? "", max: POOL });
  const concurrency = values.concurrency === undefined ? {} : { concurrency: Number(values.concurrency) };
  const runtime = new Runtime({ agents: [bench], backend, logger: silentLogger, worker: concurrency });
  // The COMPLETED runs of one turn go out as one message: a message per run costs the worker a
  // write to its IPC pipe per run (fifty per batch) in the middle of the batch it measures.
  let completed: { id: string; at: number }[] = [];
  const reportCompleted = () => {
    send({ kind: "completed", runs: completed, worker: index });
    completed = [];
  };
  runtime.onTransition((t) => {
    const at = now();
    if (t.to === "RUNNING" && t.from === "RESUMING") send({ kind: "running", id: t.runId, at });
    if (t.to === "COMPLETED") {
      if (completed.length === 0) setImmediate(reportCompleted);
      completed.push({ id: t.runId, at });
    }
  });
  onResumed = (id, at) => send({ kind: "resumed", id, at });
  await runtime.start();
  process.on("message", (m: ToChild) => {
    if (m.kind === "clock") send({ kind: "clock", at: now() });
    if (m.kind === "cpu") send({ kind: "cpu", ms: cpuMs() });
    if (m.kind === "stop") void runtime.shutdown().then(() => process.exit(0));
  });
  send({ kind: "ready" });
}

/** A DBOS client process: sends `go` to the workflow it is told, stamping when it called. */
async function dbosSenderRole(): Promise<void> {
  const { dbosSender } = (await import(PEERS_MODULE)) as PostgresPeers;
  const sender = await dbosSender(values.url ?? "");
  process.on("message", (m: ToChild) => {
    if (m.kind === "clock") send({ kind: "clock", at: now() });
    if (m.kind === "send") {
      sender.send(m.id).then(
        (t) => send({ kind: "sent", id: m.id, ...t }),
        (error: unknown) => send({ kind: "error", message: String(error) }),
      );
    }
    if (m.kind === "stop") void sender.close().then(() => process.exit(0));
  });
  send({ kind: "ready" });
}

/**
 * The systems measured, each in a process of its own: Cairn's sequential configurations, the
 * client-only Runtime that starts Cairn's concurrent runs (its workers are processes of their own),
 * DBOS and LangGraph.
 */
type SystemName = "cairn-machine" | "cairn-process" | "cairn-client" | "dbos" | "langgraph-sync" | "langgraph-async";

/**
 * A process that measures one system: it opens the system on `--url`, says what it is (its
 * label), and answers requests: `steps` runs one run of N steps (sequential), sending
 * back the per-step gaps and the CPU time this process spent per step (a warm-up is one such run
 * whose figures are left out); `batch` starts `--runs` runs of `--run-steps` steps together and
 * sends the ms until every result was in. One process per system, so that no system runs in a
 * process whose JIT and heap another system's code shaped.
 */
async function systemRole(): Promise<void> {
  const system = values.system as SystemName;
  const url = values.url ?? "";
  const runs = Number(values.runs);
  const runSteps = Number(values["run-steps"]);
  let label: string;
  let run: (steps: number) => Promise<number[]> = () => Promise.reject(new Error(`${system}: no sequential runs`));
  let batch: () => Promise<number> = () => Promise.reject(new Error(`${system}: no concurrent batches`));
  let close: () => Promise<void>;
  if (system === "cairn-client") {
    const client = await cairnClient(url, values.schema ?? "");
    label = "cairn";
    batch = () => client.batch(runs, runSteps);
    close = () => client.close();
  } else if (system === "cairn-machine" || system === "cairn-process") {
    const durability = system === "cairn-machine" ? "machine" : "process";
    const cairn = await cairnSequential(url, values.schema ?? `seq_${durability}`, durability);
    label = "cairn PostgresBackend";
    run = (n) => cairn.run(n);
    close = () => cairn.close();
  } else if (system === "dbos") {
    const dbos = await ((await import(PEERS_MODULE)) as PostgresPeers).openDbos(url);
    label = dbos.label;
    run = (n) => dbos.sequential(n, 0);
    batch = () => dbos.concurrent(runs, runSteps);
    close = () => dbos.shutdown();
  } else {
    const durability = system === "langgraph-sync" ? "sync" : "async";
    const graph = await ((await import(PEERS_MODULE)) as PostgresPeers).openLangGraph(url);
    label = graph.label;
    run = (n) => graph.sequential(durability, n, 0);
    batch = () => graph.concurrent(durability, runs, runSteps);
    close = () => graph.close();
  }
  process.on("message", (m: ToChild) => {
    if (m.kind === "steps") {
      void (async () => {
        const cpu0 = cpuMs();
        const us = await run(m.steps);
        send({ kind: "steps", us, cpuUs: ((cpuMs() - cpu0) * 1000) / m.steps });
      })().catch((error: unknown) => send({ kind: "error", message: String(error) }));
    }
    if (m.kind === "batch") {
      const startedAt = now();
      batch().then(
        (ms) => send({ kind: "batch", ms, startedAt }),
        (error: unknown) => send({ kind: "error", message: String(error) }),
      );
    }
    if (m.kind === "cpu") send({ kind: "cpu", ms: cpuMs() });
    if (m.kind === "stop") void close().then(() => process.exit(0));
  });
  send({ kind: "system", label });
}

/** Imported by a computed path, so that the type-check of cairn does not need bench/peers. */
const PEERS_MODULE = "./peers/postgres-peers.ts";

/**
 * The V8 flags of every child process, whatever system it runs. The batches of the systems are
 * interleaved, so each process idles for seconds between two of its batches while the others run;
 * after about 8 s of little allocation, V8's memory reducer shrinks the heap and the young
 * generation, and the process's next batch pays for growing them back, in scavenges every few
 * milliseconds. A process under steady load never meets that, so the bench turns the reducer off
 * for all of them alike. Measured on this 2-core VM (2026-12-01, two full runs each way): a Cairn
 * worker spent 71–83 ms of CPU in a median batch with it and 47–53 ms without, and its batch took
 * 110–119 rather than 93–97 ms; DBOS's 900–1,000 ms batches did not move.
 */
function childV8Flags(): string[] {
  // Asked of this node once, in the process that starts the children.
  childFlags ??= execFileSync(process.execPath, ["--v8-options"], { encoding: "utf8" }).includes("--memory-reducer ")
    ? ["--no-memory-reducer"]
    : [];
  return childFlags;
}
let childFlags: string[] | undefined;

/** A child process of this file in another role, and the messages it sends. */
class Child {
  readonly process: ChildProcess;
  readonly #handlers = new Set<(m: ToParent) => void>();
  #exited: Promise<void>;

  constructor(role: string, args: string[]) {
    this.process = fork(fileURLToPath(import.meta.url), ["--role", role, "--pool", String(POOL), ...args], {
      // e.g. CAIRN_BENCH_CHILD_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the workers.
      execArgv: [
        "--import",
        "tsx",
        ...childV8Flags(),
        ...(process.env.CAIRN_BENCH_CHILD_NODE_ARGS?.split(" ").filter(Boolean) ?? []),
      ],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.process.on("message", (m: ToParent) => {
      if (m.kind === "error") console.error(`child ${this.process.pid}: ${m.message}`);
      for (const h of [...this.#handlers]) h(m);
    });
    this.#exited = new Promise((resolve) => this.process.once("exit", () => resolve()));
    children.add(this);
  }

  on(handler: (m: ToParent) => void): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  next<K extends ToParent["kind"]>(kind: K, test: (m: Extract<ToParent, { kind: K }>) => boolean = () => true) {
    return new Promise<Extract<ToParent, { kind: K }>>((resolve, reject) => {
      const onExit = () => reject(new Error(`child ${this.process.pid} exited while ${kind} was awaited`));
      this.process.once("exit", onExit);
      const off = this.on((m) => {
        if (m.kind === kind && test(m as Extract<ToParent, { kind: K }>)) {
          off();
          this.process.off("exit", onExit);
          resolve(m as Extract<ToParent, { kind: K }>);
        }
      });
    });
  }

  send(message: ToChild): void {
    this.process.send(message);
  }

  /** Estimated offset of the child's clock from this process's (ms), from the quickest of 20 pings. */
  async clockOffset(): Promise<{ offset: number; rtt: number }> {
    let best = { offset: Number.NaN, rtt: Number.POSITIVE_INFINITY };
    for (let i = 0; i < 20; i++) {
      const t0 = now();
      const reply = this.next("clock");
      this.send({ kind: "clock" });
      const { at } = await reply;
      const t1 = now();
      if (t1 - t0 < best.rtt) best = { offset: at - (t0 + t1) / 2, rtt: t1 - t0 };
    }
    return best;
  }

  /** CPU time the child has used, ms. */
  async cpu(): Promise<number> {
    const reply = this.next("cpu");
    this.send({ kind: "cpu" });
    return (await reply).ms;
  }

  async stop(): Promise<void> {
    if (this.process.exitCode === null && this.process.connected) this.send({ kind: "stop" });
    await this.#exited;
    children.delete(this);
  }
}
const children = new Set<Child>();

// ---------------------------------------------------------------------------------------------
// Figures

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
const fmt = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
const int = (v: number) => Math.round(v).toLocaleString("en-US");
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const median = (xs: number[]) =>
  quantile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const show = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
  console.log(show(header));
  for (const r of rows) console.log(show(r));
}

interface Series {
  name: string;
  us: number[];
  /** CPU time this process used, µs per step (or commit). */
  cpuUs: number;
  /** CPU time the server's backends for the system's database used, µs per step. */
  serverUs: number;
}

/** One row per system: the median round's mean, percentiles of all rounds, × the round's bare commit. */
function printSteps(rounds: Series[][]): void {
  const names = rounds[0]?.map((s) => s.name) ?? [];
  printTable(
    ["", "µs/step", "steps/s", "p50 µs", "p90 µs", "p99 µs", "× commit", "CPU µs: node", "server", "round means µs"],
    names.map((name, i) => {
      const perRound = rounds.map((r) => r[i]?.us ?? []);
      const means = perRound.map(mean);
      const ratios = rounds.map((r, k) => (means[k] ?? Number.NaN) / mean(r[0]?.us ?? []));
      const m = median(means);
      const sorted = perRound.flat().sort((a, b) => a - b);
      return [
        name,
        fmt(m),
        int(1e6 / m),
        fmt(quantile(sorted, 0.5)),
        fmt(quantile(sorted, 0.9)),
        fmt(quantile(sorted, 0.99)),
        median(ratios).toFixed(2),
        fmt(median(rounds.map((r) => r[i]?.cpuUs ?? Number.NaN))),
        fmt(median(rounds.map((r) => r[i]?.serverUs ?? Number.NaN))),
        means.map(fmt).join(" "),
      ];
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// The parent

async function main(): Promise<void> {
  const STEPS = Number(values.steps);
  const ROUNDS = Number(values.rounds);
  const WARM_UP = Number(values["warm-up"]);
  const RUNS = Number(values.runs);
  const RUN_STEPS = Number(values["run-steps"]);
  const WORKERS = values.workers.split(",").map(Number);
  const BATCHES = Number(values.batches);
  const WARM_UP_BATCHES = Number(values["warm-up-batches"]);
  const SIGNALS = Number(values.signals);
  const SIGNAL_WARM_UP = 20;
  const started = performance.now();

  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  const show = async (name: string) => (await admin.query(`SHOW ${name}`)).rows[0]?.[name] as string;
  const server = {
    version: (await show("server_version")).split(" ")[0],
    synchronousCommit: await show("synchronous_commit"),
    fsync: await show("fsync"),
    walSyncMethod: await show("wal_sync_method"),
    commitDelay: await show("commit_delay"),
    maxConnections: await show("max_connections"),
  };
  const prefix = `cairn_pgbench_${randomBytes(3).toString("hex")}`;
  const databases: string[] = [];
  const database = async (system: string) => {
    const name = `${prefix}_${system}`;
    await admin.query(`CREATE DATABASE "${name}"`);
    databases.push(name);
    const url = new URL(SERVER_URL);
    url.pathname = `/${name}`;
    return url.toString();
  };
  const cleanUp = async () => {
    for (const child of [...children]) child.process.kill("SIGKILL");
    for (const name of databases.splice(0)) {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
    }
    await admin.end().catch(() => undefined);
  };
  process.once("SIGINT", () => void cleanUp().finally(() => process.exit(130)));
  process.once("SIGTERM", () => void cleanUp().finally(() => process.exit(143)));
  // Output piped into `head`: finish (and drop the databases) rather than die of EPIPE.
  process.stdout.on("error", () => {});

  const cpu = cpus();
  const url = new URL(SERVER_URL);
  console.log(
    `machine: ${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores, node ${process.version}; ` +
      `load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`,
  );
  console.log(
    `server: PostgreSQL ${server.version} at ${url.host} (TCP, same machine): synchronous_commit=${server.synchronousCommit},` +
      ` fsync=${server.fsync}, wal_sync_method=${server.walSyncMethod}, commit_delay=${server.commitDelay},` +
      ` max_connections=${server.maxConnections}`,
  );
  console.log(
    childV8Flags().length > 0
      ? `child processes (every system's): node ${childV8Flags().join(" ")}, so that a process idle between its interleaved batches is not shrunk by V8's memory reducer`
      : "child processes: this V8 has no memory reducer flag; each process idle between its interleaved batches may be shrunk by it",
  );
  console.log(`databases: ${prefix}_* (created now, dropped at the end)\n`);

  let peers: { dbos: DbosPeer; dbosUrl: string } | undefined;
  serverAdmin = admin;
  try {
    const cairnUrl = await database("cairn");
    let peerUrls: { load: PostgresPeers; dbosUrl: string; graphUrl: string } | undefined;
    if (!values["skip-peers"]) {
      try {
        const load = (await import(PEERS_MODULE)) as PostgresPeers;
        peerUrls = { load, dbosUrl: await database("dbos"), graphUrl: await database("langgraph") };
      } catch (error) {
        console.log(
          `peers not measured: ${String(error).split("\n")[0]} (npm run bench:postgres installs bench/peers)\n`,
        );
      }
    }

    // 1. Sequential -----------------------------------------------------------------------------
    // Rounds, each system once per round in turn, so that what else the server does at a moment
    // (it is shared) falls on all of them; the warm-up run only in the first round.
    // Each system in a child process of its own (systemRole); the bare commits in this one.
    const systems: { name: string; url: string; child: Child }[] = [];
    const seqSystems: [SystemName, string, (label: string) => string][] = [
      ["cairn-machine", cairnUrl, (label) => `${label}, durability "machine"`],
      ["cairn-process", cairnUrl, (label) => `${label}, durability "process"`],
      ...(peerUrls
        ? ([
            ["dbos", peerUrls.dbosUrl, (label) => `${label}, DBOS.runStep per step`],
            ["langgraph-sync", peerUrls.graphUrl, (label) => `${label}, node per step, "sync"`],
            ["langgraph-async", peerUrls.graphUrl, (label) => `${label}, node per step, "async"`],
          ] as [SystemName, string, (label: string) => string][])
        : []),
    ];
    for (const [system, url, name] of seqSystems) {
      const child = new Child("system", ["--system", system, "--url", url]);
      const { label } = await child.next("system");
      systems.push({ name: name(label), url, child });
    }
    const rounds: Series[][] = [];
    try {
      for (let round = 0; round < ROUNDS; round++) {
        process.stderr.write(`1. sequential, round ${round + 1}/${ROUNDS}\n`);
        const series = await bareCommits(cairnUrl, STEPS, round === 0 ? WARM_UP : 0);
        for (const system of systems) {
          const steps = (n: number) => {
            const done = system.child.next("steps");
            system.child.send({ kind: "steps", steps: n });
            return done;
          };
          if (round === 0) await steps(WARM_UP);
          const server0 = await serverCpu(databaseOf(system.url));
          const { us, cpuUs } = await steps(STEPS);
          const serverUs = (serverCpuSpent(server0, await serverCpu(databaseOf(system.url))) * 1000) / STEPS;
          series.push({ name: system.name, us, cpuUs, serverUs });
        }
        rounds.push(series);
      }
    } finally {
      for (const system of systems) await system.child.stop();
    }
    console.log(
      `1. Sequential: one run of ${int(STEPS)} trivial steps per system and round, ${ROUNDS} rounds (each system once` +
        ` per round, in turn; a warm-up run of ${int(WARM_UP)} first), each system in a process of its own`,
    );
    printSteps(rounds);
    console.log(
      "   µs/step: mean of the median round; p50/p90/p99: of the gaps between consecutive step completions, all rounds;\n" +
        "   × commit: median over rounds of the system's mean over that round's bare synchronous commit (first row);\n" +
        "   CPU µs/step, median round: node = the system's process (client, runtime, driver); server = the PostgreSQL backends\n" +
        "   of the system's database (/proc, 10 ms ticks).\n" +
        "   bare commit: one INSERT of a small row into a fresh table, each its own transaction, over one pg connection.\n" +
        '   cairn "machine": one fenced journal insert per step (the result of step i rides with the start record of step i+1),\n' +
        '   committed with synchronous_commit=on; "process": the same with synchronous_commit=off.\n' +
        "   DBOS: one INSERT … COMMIT of the step's output per step. LangGraph: a one-node graph looping N times, so a\n" +
        "   step is a super-step: putWrites (BEGIN, INSERT, COMMIT) then put (BEGIN, blob upserts, checkpoint, COMMIT);\n" +
        '   "sync" waits for the checkpoint before the next step, "async" (LangGraph\'s default) does not.',
    );
    const machine = median(
      rounds.map((r) => mean(r.find((s) => s.name.endsWith('"machine"'))?.us ?? []) / mean(r[0]?.us ?? [])),
    );
    console.log(
      `   goal: cairn "machine" within 2x of one synchronous commit: ${machine <= 2 ? "met" : "MISSED"} (${machine.toFixed(2)}x)\n`,
    );

    // 2. Concurrent -----------------------------------------------------------------------------
    // Interleaved: each system's first batch, then each system's second, and so on, so that what
    // the shared machine does at a moment (a noisy neighbour, the server's checkpoints) falls on
    // all of them alike and the ratios compare batches of the same minutes.
    process.stderr.write("2. concurrent\n");
    // Every system in processes of its own: DBOS and LangGraph each in one (systemRole), Cairn's
    // client-only Runtime in one and its workers in theirs.
    const systemsConc: ConcurrentSystem[] = [];
    const peerBatches = async (system: SystemName, url: string, name: (label: string) => string, note: string) => {
      const child = new Child("system", [
        "--system",
        system,
        "--url",
        url,
        "--runs",
        String(RUNS),
        "--run-steps",
        String(RUN_STEPS),
      ]);
      const { label } = await child.next("system");
      systemsConc.push({
        name: name(label),
        database: databaseOf(url),
        client: child,
        workers: [],
        batch: () => batchOf(child),
        note: () => note,
        close: () => child.stop(),
      });
    };
    if (peerUrls) {
      await peerBatches(
        "dbos",
        peerUrls.dbosUrl,
        (label) => `${label}, 1 process`,
        "DBOS.startWorkflow ×50, then getResult ×50; system database pool 10 (DBOS's default)",
      );
    }
    for (const workers of WORKERS) {
      process.stderr.write(`2. concurrent: starting cairn with ${workers} worker process(es)\n`);
      systemsConc.push(await cairnConcurrent(cairnUrl, `conc_w${workers}`, workers, RUNS, RUN_STEPS, WARM_UP_BATCHES));
    }
    if (peerUrls) {
      for (const durability of ["sync", "async"] as const) {
        await peerBatches(
          `langgraph-${durability}`,
          peerUrls.graphUrl,
          (label) => `${label} "${durability}", 1 process`,
          "app.invoke ×50 with distinct thread ids; PostgresSaver's pool 10 (pg's default)",
        );
      }
    }
    const measured = new Map<ConcurrentSystem, { ms: number[]; cpu: BatchCpu[] }>(
      systemsConc.map((system) => [system, { ms: [], cpu: [] }]),
    );
    try {
      // Warm-up batches (5,000 steps each by default, as the sequential warm-up), not measured.
      for (let i = 0; i < WARM_UP_BATCHES; i++) for (const system of systemsConc) await system.batch();
      for (let i = 0; i < BATCHES; i++) {
        process.stderr.write(`2. concurrent, batch ${i + 1}/${BATCHES}\n`);
        for (const system of systemsConc) {
          const b = await withCpu(system.client, system.workers, system.database, system.batch);
          const m = measured.get(system) as { ms: number[]; cpu: BatchCpu[] };
          m.ms.push(b.result.ms);
          m.cpu.push(b.cpu);
        }
      }
    } finally {
      for (const system of systemsConc) await system.close();
    }
    const conc: string[][] = [];
    const concNotes: string[] = [];
    const stepsPerS = (ms: number) => (RUNS * RUN_STEPS) / (ms / 1000);
    const dbosMs = peerUrls ? measured.get(systemsConc[0] as ConcurrentSystem)?.ms : undefined;
    const dbosStepsPerS = dbosMs ? stepsPerS(median(dbosMs)) : Number.NaN;
    const cairnStepsPerS: number[] = [];
    for (const system of systemsConc) {
      const { ms, cpu } = measured.get(system) as { ms: number[]; cpu: BatchCpu[] };
      const rate = stepsPerS(median(ms));
      if (system.cairn) cairnStepsPerS.push(rate);
      conc.push([
        system.name,
        fmt(median(ms)),
        int(RUNS / (median(ms) / 1000)),
        int(rate),
        `${int(stepsPerS(Math.max(...ms)))}–${int(stepsPerS(Math.min(...ms)))}`,
        Number.isNaN(dbosStepsPerS) ? "1.0" : (rate / dbosStepsPerS).toFixed(1),
        cpuCell(cpu, system.workers.length > 0),
      ]);
      concNotes.push(`   ${system.name}: ${system.note()}`);
    }
    console.log(
      `2. Concurrent: ${RUNS} runs × ${RUN_STEPS} steps started together; ${BATCHES} measured batches of each system after` +
        ` ${WARM_UP_BATCHES} warm-up batches, interleaved (each system's first batch, then each one's second, …); median batch`,
    );
    printTable(["", "ms", "runs/s", "steps/s", "steps/s range", "× DBOS", "CPU in the batch (median)"], conc);
    console.log(
      "   ms: from starting the first run to the last result seen by the process that started them (median batch).\n" +
        `   cairn: a client-only Runtime in a process of its own (runtime.run ×${RUNS}, then runtime.waitFor ×${RUNS}); the runs are\n` +
        `   claimed and driven by child worker processes (Runtime with a worker, concurrency ${RUNS}, pool ${POOL} each).\n` +
        "   What the runs of one process ask for in the same turn of the event loop shares a statement: the client's\n" +
        "   creations, each worker's claims, its RUNNING and ending transitions, and its step writes (one fenced journal\n" +
        "   insert and one commit per round of steps of all its runs; a run's last results ride with its COMPLETED).\n" +
        "   Each system in processes of its own: DBOS and LangGraph one each, Cairn its client's and its workers'.\n" +
        "   CPU: ms used in the batch by the process that started the runs and by the worker processes; machine: busy share of all cores\n" +
        "   (every process on the machine, the PostgreSQL server and anything else running, included).",
    );
    for (const note of concNotes) console.log(note);
    if (!Number.isNaN(dbosStepsPerS)) {
      const best = Math.max(...cairnStepsPerS);
      const times = best / dbosStepsPerS;
      console.log(
        `   goal: cairn at least 10x DBOS: ${times >= 10 ? "met" : "MISSED"} (${times.toFixed(1)}x with the best worker count; ${cairnStepsPerS.map((v) => (v / dbosStepsPerS).toFixed(1)).join(" / ")} with ${WORKERS.join(" / ")})`,
      );
    }
    console.log();

    // 3. Signals --------------------------------------------------------------------------------
    process.stderr.write("3. signals\n");
    // DBOS in this process now (its workflows wait in DBOS.recv here), once its measuring processes
    // are gone: two DBOS runtimes on one system database would recover each other's workflows.
    if (peerUrls) peers = { dbos: await peerUrls.load.openDbos(peerUrls.dbosUrl), dbosUrl: peerUrls.dbosUrl };
    console.log(
      `3. Signal latency across processes: ${SIGNALS} runs parked, signalled one at a time (after ${SIGNAL_WARM_UP} not measured)`,
    );
    const cairnSignals = await cairnSignalLatency(cairnUrl, "signal", SIGNALS, SIGNAL_WARM_UP);
    const lines: string[][] = [];
    const latencyRow = (name: string, ms: number[]) => {
      const s = [...ms].sort((a, b) => a - b);
      lines.push([name, ...[0.5, 0.9, 0.99, 1].map((q) => fmt(quantile(s, q)))]);
    };
    latencyRow("cairn: RUNNING recorded by the worker process", cairnSignals.running);
    latencyRow("cairn: workflow code past ctx.waitForSignal", cairnSignals.resumed);
    latencyRow("cairn: runtime.signal returned (in the client)", cairnSignals.returned);
    latencyRow("cairn: COMPLETED recorded", cairnSignals.completed);
    let dbosOffset = "";
    if (peers) {
      const dbosSignals = await dbosSignalLatency(peers.dbos, SIGNALS, SIGNAL_WARM_UP);
      latencyRow(`${peers.dbos.label}: DBOS.recv returned in the workflow`, dbosSignals.received);
      latencyRow(`${peers.dbos.label}: DBOSClient.send returned`, dbosSignals.returned);
      dbosOffset = `; DBOS client process ${fmt(dbosSignals.clock.offset * 1000)} µs (rtt ${fmt(dbosSignals.clock.rtt * 1000)} µs)`;
    }
    printTable(["ms from the signal call", "p50", "p90", "p99", "max"], lines);
    console.log(
      "   cairn: the client (this process) calls runtime.signal; a worker process (concurrency 16, the default) is woken\n" +
        "   by NOTIFY, claims the run and records RUNNING, replays it to the wait and runs on. DBOS: workflows wait in\n" +
        "   DBOS.recv in this process; a child process calls DBOSClient.send.\n" +
        `   clock offsets, child minus this process: cairn worker ${fmt(cairnSignals.clock.offset * 1000)} µs` +
        ` (rtt ${fmt(cairnSignals.clock.rtt * 1000)} µs)${dbosOffset}.`,
    );
    console.log(
      `   goal: p50 signal -> RUNNING under 20 ms across processes: ${
        quantile(
          [...cairnSignals.running].sort((a, b) => a - b),
          0.5,
        ) < 20
          ? "met"
          : "MISSED"
      }\n`,
    );
    console.log(`total ${((performance.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    await peers?.dbos.shutdown().catch(() => undefined);
    await cleanUp();
  }
}

/** Jiffies the machine's CPUs spent busy and in all, from /proc/stat (Linux; zeros elsewhere). */
function machineCpu(): { busy: number; total: number } {
  try {
    const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
    const total = fields.reduce((a, b) => a + b, 0);
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return { busy: 0, total: 0 };
  }
}

/**
 * CPU time (ms) of the server processes serving a database: its backends' utime + stime from
 * /proc/<pid>/stat (the server runs on this machine; USER_HZ 100, so 10 ms a tick per process).
 */
let serverAdmin: pg.Client | undefined;
async function serverCpu(database: string): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (!serverAdmin) return out;
  const { rows } = await serverAdmin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1", [
    database,
  ]);
  for (const { pid } of rows) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.set(pid, (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // not on this machine, or gone
    }
  }
  return out;
}

/** Server CPU (ms) used between two snapshots; a backend that appeared in between counts whole. */
function serverCpuSpent(before: Map<number, number>, after: Map<number, number>): number {
  let ms = 0;
  for (const [pid, t] of after) ms += t - (before.get(pid) ?? 0);
  return ms;
}

const databaseOf = (url: string) => decodeURIComponent(new URL(url).pathname.slice(1));

/** Where a batch's CPU went: this process, its workers and the server's backends (ms), and how busy the machine was. */
interface BatchCpu {
  self: number;
  workers: number;
  server: number;
  /** Busy share of all the machine's CPUs during the batch (every process on it, the server too). */
  busy: number;
}

/**
 * Runs `batch`, measuring the CPU it used in `client` (the process that starts the runs), in
 * `workers`, on the server and on the whole machine.
 */
async function withCpu<T>(
  client: Child,
  workers: Child[],
  database: string,
  batch: () => Promise<T>,
): Promise<{ result: T; cpu: BatchCpu }> {
  const workersCpu = async () => (await Promise.all(workers.map((w) => w.cpu()))).reduce((a, b) => a + b, 0);
  const before = {
    server: await serverCpu(database),
    workers: await workersCpu(),
    self: await client.cpu(),
    machine: machineCpu(),
  };
  const result = await batch();
  const machine = machineCpu();
  const self = (await client.cpu()) - before.self;
  const cpu = {
    self,
    workers: (await workersCpu()) - before.workers,
    server: serverCpuSpent(before.server, await serverCpu(database)),
    busy: (machine.busy - before.machine.busy) / Math.max(1, machine.total - before.machine.total),
  };
  return { result, cpu };
}

/** The CPU of the median batches, as a cell. */
function cpuCell(cpu: BatchCpu[], workers: boolean): string {
  const m = (pick: (c: BatchCpu) => number) => fmt(median(cpu.map(pick)));
  const node = workers ? `client ${m((c) => c.self)} + workers ${m((c) => c.workers)}` : `process ${m((c) => c.self)}`;
  return `${node}, server ${m((c) => c.server)} ms; machine ${Math.round(median(cpu.map((c) => c.busy)) * 100)} % busy`;
}

/** The bare cost of a commit, measured over one pg connection in a fresh schema. */
async function bareCommits(url: string, count: number, warmUp: number): Promise<Series[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const schema = `bare_${randomBytes(3).toString("hex")}`;
  try {
    await client.query(`CREATE SCHEMA ${schema}`);
    await client.query(`CREATE TABLE ${schema}.t (id bigserial PRIMARY KEY, v text NOT NULL)`);
    const insert = { name: "bare-insert", text: `INSERT INTO ${schema}.t (v) VALUES ($1)` };
    const row = (i: number) => ({ ...insert, values: [`{"seq":${i},"result":${i}}`] });
    // In this order: the last one turns synchronous commits off for the session.
    const variants: [string, (i: number) => Promise<unknown>, string?][] = [
      ["bare commit: INSERT, autocommit, synchronous_commit=on", (i) => client.query(row(i))],
      [
        "bare commit: BEGIN; INSERT; COMMIT (3 round trips)",
        async (i) => {
          await client.query("BEGIN");
          await client.query(row(i));
          await client.query("COMMIT");
        },
      ],
      [
        "INSERT, autocommit, synchronous_commit=off (no flush)",
        (i) => client.query(row(i)),
        "SET synchronous_commit = off",
      ],
    ];
    const out: Series[] = [];
    for (const [name, commit, setup] of variants) {
      if (setup) await client.query(setup);
      for (let i = 0; i < warmUp; i++) await commit(i);
      const us: number[] = [];
      const server0 = await serverCpu(databaseOf(url));
      const cpu0 = cpuMs();
      for (let i = 0; i < count; i++) {
        const t0 = performance.now();
        await commit(i);
        us.push((performance.now() - t0) * 1000);
      }
      const cpuUs = ((cpuMs() - cpu0) * 1000) / count;
      const serverUs = (serverCpuSpent(server0, await serverCpu(databaseOf(url))) * 1000) / count;
      out.push({ name, us, cpuUs, serverUs });
    }
    return out;
  } finally {
    await client.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => undefined);
    await client.end();
  }
}

interface CairnSequential {
  run(steps: number): Promise<number[]>;
  close(): Promise<void>;
}

/** A Runtime with its worker in this process, on its own schema, kept open across rounds. */
async function cairnSequential(
  url: string,
  schema: string,
  durability: "machine" | "process",
): Promise<CairnSequential> {
  const backend = new PostgresBackend({ connectionString: url, schema, durability, max: POOL });
  const runtime = new Runtime({ agents: [bench], backend, logger: silentLogger });
  await runtime.start();
  return {
    async run(steps) {
      const measured: number[] = [];
      gaps = measured;
      const handle = await runtime.run(bench, "steps", { n: steps });
      const sum = await handle.result();
      gaps = undefined;
      if (sum !== (steps * (steps - 1)) / 2) throw new Error(`cairn: wrong result ${sum}`);
      const recorded = (await runtime.history(handle.id)).steps;
      if (recorded.length !== steps || recorded.some((s) => s.status !== "completed")) {
        throw new Error("cairn: steps not journaled");
      }
      if (measured.length !== steps) throw new Error(`cairn: ${measured.length} gaps for ${steps} steps`);
      return measured;
    },
    close: () => runtime.shutdown(),
  };
}

/** Starts `workers` worker processes on `schema`, the runs from this process; ms per batch. */
/** One system of the concurrent measurement, ready for its batches. */
interface ConcurrentSystem {
  name: string;
  /** The database whose server backends' CPU a batch counts. */
  database: string;
  /** The process that starts the runs and waits for their results. */
  client: Child;
  /** Its worker processes (Cairn's), whose CPU a batch counts too. */
  workers: Child[];
  /** Cairn's configurations, compared with DBOS for the goal. */
  cairn?: boolean;
  /** One batch: ms until the process that started the runs saw every result. */
  batch: () => Promise<{ ms: number; startedAt: number }>;
  /** What the table's note says of it, once every batch ran. */
  note: () => string;
  close: () => Promise<void>;
}

/**
 * Cairn with `workers` worker processes on `schema`: a client-only Runtime here starts the runs and
 * waits for them. Each batch checks every run COMPLETED with the right output; `close` checks the
 * journal holds every step of every batch once, then stops the workers.
 */
/** One batch of the system in `child`: ms until it saw every result, and when it started (shared clock). */
async function batchOf(child: Child): Promise<{ ms: number; startedAt: number }> {
  const done = child.next("batch");
  child.send({ kind: "batch" });
  const { ms, startedAt } = await done;
  return { ms, startedAt };
}

/** A started client-only Runtime on `schema` (it applies the migrations). */
async function clientRuntime(url: string, schema: string): Promise<Runtime> {
  const client = new Runtime({
    agents: [bench],
    backend: new PostgresBackend({ connectionString: url, schema, max: POOL }),
    logger: silentLogger,
    worker: false,
  });
  await client.start();
  return client;
}

/**
 * Cairn's client for the concurrent batches (in a `system` process of its own): a client-only
 * Runtime on `schema` that starts the runs and waits for each result, checking every output.
 */
async function cairnClient(url: string, schema: string) {
  const client = await clientRuntime(url, schema);
  return {
    async batch(runs: number, steps: number): Promise<number> {
      const t0 = performance.now();
      const handles = await Promise.all(Array.from({ length: runs }, () => client.run(bench, "steps", { n: steps })));
      const ended = await Promise.all(handles.map((h) => client.waitFor(h.id)));
      const ms = performance.now() - t0;
      const wrong = ended.filter((r) => r.state !== "COMPLETED" || r.output !== (steps * (steps - 1)) / 2);
      if (wrong.length > 0) throw new Error(`cairn: ${wrong.length} runs not COMPLETED with the right output`);
      return ms;
    },
    close: () => client.shutdown(),
  };
}

async function cairnConcurrent(
  url: string,
  schema: string,
  workers: number,
  runs: number,
  steps: number,
  warmUpBatches: number,
): Promise<ConcurrentSystem> {
  // The client first: its Runtime applies the migrations before the workers start.
  const client = new Child("system", [
    "--system",
    "cairn-client",
    "--url",
    url,
    "--schema",
    schema,
    "--runs",
    String(runs),
    "--run-steps",
    String(steps),
  ]);
  await client.next("system");
  const spawned = Array.from(
    { length: workers },
    (_, i) =>
      new Child("worker", ["--url", url, "--schema", schema, "--index", String(i), "--concurrency", String(runs)]),
  );
  await Promise.all(spawned.map((c) => c.next("ready")));
  const done = new Map<number, number>();
  const recorded: number[] = [];
  let batches = 0;
  let lastCompleted = 0;
  let completed = 0;
  let allReported = () => {};
  for (const c of spawned) {
    c.on((m) => {
      if (m.kind !== "completed") return;
      done.set(m.worker, (done.get(m.worker) ?? 0) + m.runs.length);
      for (const r of m.runs) lastCompleted = Math.max(lastCompleted, r.at);
      completed += m.runs.length;
      if (completed === runs) allReported();
    });
  }
  const batch = async () => {
    completed = 0;
    const reported = new Promise<void>((resolve) => {
      allReported = resolve;
    });
    const { ms, startedAt } = await batchOf(client);
    await reported; // the workers' messages may come after the wake-ups
    // The warm-up batches are not counted.
    if (batches++ < warmUpBatches) done.clear();
    else recorded.push(lastCompleted - startedAt);
    return { ms, startedAt };
  };
  return {
    name: `cairn "machine", ${workers} worker process${workers === 1 ? "" : "es"}`,
    database: databaseOf(url),
    client,
    workers: spawned,
    cairn: true,
    batch,
    note: () => {
      const measured = Math.max(1, batches - warmUpBatches);
      const perWorker = spawned.map((_, i) => int((done.get(i) ?? 0) / measured)).join("/");
      return `runs per worker ${perWorker}; last COMPLETED recorded by a worker at ${fmt(median(recorded))} ms`;
    },
    close: async () => {
      try {
        const journaled = await countSteps(url, schema);
        if (journaled !== runs * steps * batches) throw new Error(`cairn: ${journaled} steps journaled`);
      } finally {
        await Promise.all(spawned.map((c) => c.stop()));
        await client.stop();
      }
    },
  };
}

async function countSteps(url: string, schema: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    // Distinct (run, seq) in the step journal: a step's start record and its result are two entries.
    return (
      await c.query(
        `SELECT count(*)::integer AS n FROM (SELECT DISTINCT run_id, (e->>'seq')::int FROM "${schema}".journal, json_array_elements(steps) e) t`,
      )
    ).rows[0].n as number;
  } finally {
    await c.end();
  }
}

interface SignalFigures {
  running: number[];
  resumed: number[];
  returned: number[];
  completed: number[];
  clock: { offset: number; rtt: number };
}

/** Parks runs in a worker process, signals them one at a time from this process. */
async function cairnSignalLatency(url: string, schema: string, count: number, warmUp: number): Promise<SignalFigures> {
  const client = await clientRuntime(url, schema);
  const worker = new Child("worker", ["--url", url, "--schema", schema]);
  try {
    await worker.next("ready");
    const clock = await worker.clockOffset();
    const total = count + warmUp;
    for (let i = 0; i < total; i++) await client.run(bench, "park", { i });
    for (;;) {
      const paused = await client.listRuns({ state: "PAUSED", workflow: "park", limit: total });
      if (paused.length === total) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const ids = (await client.listRuns({ state: "PAUSED", workflow: "park", limit: total })).map((r) => r.id);
    const figures: SignalFigures = { running: [], resumed: [], returned: [], completed: [], clock };
    for (const [n, id] of ids.entries()) {
      const running = worker.next("running", (m) => m.id === id);
      const resumed = worker.next("resumed", (m) => m.id === id);
      const completed = worker
        .next("completed", (m) => m.runs.some((r) => r.id === id))
        .then((m) => m.runs.find((r) => r.id === id) as { id: string; at: number });
      const t0 = now();
      await client.signal(id, "go", { ok: true });
      const returned = now();
      const [r, s, c] = await Promise.all([running, resumed, completed]);
      if (n < warmUp) continue;
      figures.running.push(r.at - t0);
      figures.resumed.push(s.at - t0);
      figures.returned.push(returned - t0);
      figures.completed.push(c.at - t0);
    }
    return figures;
  } finally {
    await worker.stop();
    await client.shutdown();
  }
}

/** Workflows in `DBOS.recv` in this process, `DBOSClient.send` from a child process. */
async function dbosSignalLatency(dbos: DbosPeer, count: number, warmUp: number) {
  const sender = new Child("dbos-sender", ["--url", dbos.url]);
  try {
    await sender.next("ready");
    const clock = await sender.clockOffset();
    const ids = await dbos.park(count + warmUp);
    await dbos.settled(ids);
    const received: number[] = [];
    const returned: number[] = [];
    for (const [n, id] of ids.entries()) {
      const got = dbos.received(id);
      const sent = sender.next("sent", (m) => m.id === id);
      sender.send({ kind: "send", id });
      const [at, s] = await Promise.all([got, sent]);
      if (n < warmUp) continue;
      received.push(at - s.calledAt);
      returned.push(s.returnedAt - s.calledAt);
    }
    return { received, returned, clock };
  } finally {
    await sender.stop();
  }
}

if (values.role === "worker") await workerRole();
else if (values.role === "system") await systemRole();
else if (values.role === "dbos-sender") await dbosSenderRole();
else await main();
