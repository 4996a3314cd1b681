/**
 * Issue 7's load check of the HTTP API: `cairn dev` (started as a user would, a child process on a
 * fresh SQLite file, its URL read from what it prints) with C clients on the all-runs event stream
 * `GET /api/events` (default 200) while runs are started with `POST /api/runs` at R per second
 * (default 50) for S seconds (default 30), open loop: each request leaves at its time on a fixed
 * schedule, whether or not the ones before it have been answered. The workflow is
 * report_builder/build (two tool steps, a few ms; CAIRN_DEMO_STEP_DELAY_MS is removed from the
 * child's environment).
 *
 * Prints, beside the machine: the start requests' latency (send → response) and errors, and where
 * it goes (send → PENDING's `at`, → RUNNING, → COMPLETED, → the response read); the event delivery
 * latency (a transition's `at`, the server's clock, → a client reading it, the same clock); the CPU
 * each process used. Clients and requests use node:http, with a small SSE parser (no dependency). Then, once every started run has finished and the clients have caught
 * up, checks that every client received every transition of every started run (PENDING, RUNNING,
 * COMPLETED, ids 1..n) exactly once and in order, the same as GET /api/runs/:id/transitions
 * records, with the feed's sequence numbers gapless; prints the counts and PASS or FAIL, and exits
 * with 1 on FAIL. One machine on loopback: the load generator (this process, clients included)
 * shares the cores with the server. Figures only; nothing is asserted on time.
 *
 *   npm run bench:server                                        # builds dist/, then 30 s, 200 clients, 50/s
 *   npm run bench:server -- --seconds 5 --clients 20 --rate 10
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { percentiles } from "./report.ts";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "30" },
    clients: { type: "string", default: "200" },
    rate: { type: "string", default: "50" },
  },
});
const SECONDS = Number(values.seconds);
const CLIENTS = Number(values.clients);
const RATE = Number(values.rate);
/** Runs started one at a time before the clients connect and the load begins; not measured. */
const WARM_UP = 50;
const START_BODY = JSON.stringify({ agent: "report_builder", workflow: "build", input: { quarter: "2026-Q3" } });
const EXPECTED_STATES = ["PENDING", "RUNNING", "COMPLETED"] as const;
const FINAL = new Set(["COMPLETED", "FAILED", "BLOCKED", "CANCELLED", "COMPENSATED"]);

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const dir = mkdtempSync(join(tmpdir(), "cairn-server-load-"));

const fmt = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
const n = (v: number) => Math.round(v).toLocaleString("en-US");
/** Wall-clock ms with a fraction: what a transition's `at` (Date.now() in the server) is compared with. */
const wallNow = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Resolves after `ms` without keeping the process alive. */
const deadline = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

interface Transition {
  runId: string;
  id: number;
  at: number;
  from: string | null;
  to: string;
}

// ---------------------------------------------------------------------------------------------
// The server: `cairn dev` as a child process.

interface Server {
  child: ChildProcess;
  url: string;
  stderr: () => string;
}

async function startServer(): Promise<Server> {
  const env = { ...process.env };
  delete env.CAIRN_DEMO_STEP_DELAY_MS;
  const child = spawn(
    process.execPath,
    [join(ROOT, "bin", "cairn.js"), "dev", "--port", "0", "--db", join(dir, "cairn.db")],
    { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] },
  );
  let err = "";
  child.stderr?.setEncoding("utf8").on("data", (text: string) => {
    err = (err + text).slice(-4000);
  });
  // `cairn dev` prints every transition on stdout: read it all (a full pipe would block the server).
  let out = "";
  let url: string | undefined;
  const found = new Promise<string>((resolve, reject) => {
    child.stdout?.setEncoding("utf8").on("data", (text: string) => {
      if (url !== undefined) return;
      out += text;
      const match = /^cairn dev\s+(http:\/\/\S+?)\/?\s/m.exec(out);
      if (match?.[1]) {
        url = match[1];
        out = "";
        resolve(url);
      }
    });
    child.once("exit", (code, signal) =>
      reject(new Error(`cairn dev exited (${signal ?? code}) before printing its URL:\n${out}${err}`)),
    );
    setTimeout(() => reject(new Error(`cairn dev printed no URL within 60 s:\n${out}${err}`)), 60_000).unref();
  });
  return { child, url: await found, stderr: () => err };
}

async function stopServer(child: ChildProcess): Promise<string> {
  if (child.exitCode !== null || child.signalCode !== null) return `had exited (${child.signalCode ?? child.exitCode})`;
  const exited = new Promise<string>((r) => child.once("exit", (code, signal) => r(String(signal ?? code))));
  child.kill("SIGTERM");
  const timeout = deadline(15_000).then(() => undefined);
  const how = await Promise.race([exited, timeout]);
  if (how !== undefined) return `exited on SIGTERM (${how})`;
  child.kill("SIGKILL");
  return `did not exit within 15 s of SIGTERM: killed (${await exited})`;
}

/** CPU seconds (user + system) of a process, from /proc (Linux); undefined elsewhere. */
function cpuSecondsOf(pid: number | undefined): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // Fields 14 and 15 (utime, stime) of proc(5), counted from after the command name; 100 ticks/s.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

function rssOf(pid: number | undefined): string {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb ? `${(Number(kb) / 1024).toFixed(0)} MB` : "?";
  } catch {
    return "?";
  }
}

// ---------------------------------------------------------------------------------------------
// Requests: node:http on a keep-alive agent.

const agent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

function request(base: string, method: string, path: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}${path}`,
      {
        method,
        agent,
        headers:
          body === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function transitionsOf(base: string, runId: string): Promise<Transition[]> {
  const res = await request(base, "GET", `/api/runs/${runId}/transitions`);
  if (res.status !== 200) throw new Error(`GET /api/runs/${runId}/transitions: ${res.status} ${res.body}`);
  return (JSON.parse(res.body) as { transitions: Transition[] }).transitions;
}

/** Calls `work` on every item, `concurrency` at a time. */
async function eachLimited<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
}

// ---------------------------------------------------------------------------------------------
// An SSE client of GET /api/events: a small parser of the text/event-stream format.

/** The first client to receive each (run, transition id): what the others and the log are compared with. */
const firstSeen = new Map<string, Transition>();
/** ms from a transition's `at` to a client reading it, every client, every transition. */
const delivery: number[] = [];
/** The same, by the state the transition enters. */
const deliveryTo = new Map<string, number[]>();

class EventClient {
  /** Per run, the transition ids received, in order of arrival. */
  readonly runs = new Map<string, number[]>();
  received = 0;
  /** Transitions whose content differs from the first copy any client received. */
  differing = 0;
  /** `ready` events after the first one: the server restarted the stream from "now" (events lost). */
  resyncs = 0;
  /** Event ids whose sequence number is not the previous one + 1 (the feed skipped or repeated). */
  seqBreaks = 0;
  boot: string | undefined;
  lastSeq = -1;
  /** When (wall clock) it read its latest transition. */
  lastReadAt = 0;
  /** Why the stream ended before the bench closed it. */
  dropped: string | undefined;
  #closing = false;
  #req: http.ClientRequest | undefined;
  #buffer = "";
  #event = "message";
  #data: string[] = [];
  #id = "";

  constructor(
    readonly index: number,
    readonly ready: Promise<void>,
    private readonly onReady: () => void,
  ) {}

  static open(base: string, index: number): EventClient {
    let onReady!: () => void;
    const ready = new Promise<void>((r) => (onReady = r));
    const client = new EventClient(index, ready, onReady);
    client.#connect(base);
    return client;
  }

  #connect(base: string): void {
    // Its own connection, as every browser tab has.
    const req = http.get(`${base}/api/events`, { agent: false, headers: { accept: "text/event-stream" } }, (res) => {
      if (res.statusCode !== 200) {
        this.dropped = `status ${res.statusCode}`;
        res.resume();
        return;
      }
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => this.#feed(chunk, wallNow()));
      res.on("end", () => {
        if (!this.#closing) this.dropped ??= "the server ended the stream";
      });
      res.on("error", (error) => {
        if (!this.#closing) this.dropped ??= String(error);
      });
    });
    req.on("error", (error) => {
      if (!this.#closing) this.dropped ??= String(error);
    });
    this.#req = req;
  }

  close(): void {
    this.#closing = true;
    this.#req?.destroy();
  }

  #feed(chunk: string, receivedAt: number): void {
    this.#buffer += chunk;
    let start = 0;
    for (;;) {
      const end = this.#buffer.indexOf("\n", start);
      if (end < 0) break;
      let line = this.#buffer.slice(start, end);
      start = end + 1;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line === "") {
        if (this.#data.length > 0) this.#dispatch(this.#event, this.#data.join("\n"), this.#id, receivedAt);
        this.#event = "message";
        this.#data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") this.#data.push(value);
      else if (field === "event") this.#event = value;
      else if (field === "id") this.#id = value;
    }
    this.#buffer = this.#buffer.slice(start);
  }

  #dispatch(event: string, data: string, id: string, receivedAt: number): void {
    const dot = id.lastIndexOf(".");
    const boot = id.slice(0, dot);
    const seq = Number(id.slice(dot + 1));
    if (event === "ready") {
      if (this.boot === undefined) {
        this.boot = boot;
        this.lastSeq = seq;
        this.onReady();
      } else {
        this.resyncs++;
        this.lastSeq = seq;
      }
      return;
    }
    if (event !== "transition") return;
    if (boot !== this.boot || seq !== this.lastSeq + 1) this.seqBreaks++;
    this.lastSeq = seq;
    const t = JSON.parse(data) as Transition;
    this.received++;
    this.lastReadAt = receivedAt;
    delivery.push(receivedAt - t.at);
    let byTo = deliveryTo.get(t.to);
    if (byTo === undefined) {
      byTo = [];
      deliveryTo.set(t.to, byTo);
    }
    byTo.push(receivedAt - t.at);
    const key = `${t.runId}#${t.id}`;
    const first = firstSeen.get(key);
    if (first === undefined) firstSeen.set(key, { runId: t.runId, id: t.id, at: t.at, from: t.from, to: t.to });
    else if (first.at !== t.at || first.from !== t.from || first.to !== t.to) this.differing++;
    let ids = this.runs.get(t.runId);
    if (ids === undefined) {
      ids = [];
      this.runs.set(t.runId, ids);
    }
    ids.push(t.id);
  }
}

// ---------------------------------------------------------------------------------------------
// The run.

interface Start {
  /** ms the request left after its time on the schedule (the generator's own lateness). */
  lag: number;
  /** ms from sending the request to the end of its response. */
  latency: number;
  /** When it was sent, on the wall clock (as transitions' `at`). */
  sentAt: number;
  status: number;
  runId?: string;
  error?: string;
}

const cpu = cpus();
console.log(
  `machine: ${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores, node ${process.version}, ${process.platform} ${process.arch}` +
    `; load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
);
console.log(
  `one machine, loopback: the load generator (this process: ${n(CLIENTS)} SSE clients and the requests) shares the ${cpu.length} cores with the server`,
);

let server: Server | undefined;
let clients: EventClient[] = [];
let exitCode = 0;
try {
  const t0 = performance.now();
  server = await startServer();
  const base = server.url;
  const pid = server.child.pid;
  console.log(
    `cairn dev at ${base}/ (pid ${pid}) on ${join(dir, "cairn.db")}, ready in ${fmt(performance.now() - t0)} ms`,
  );

  // Warm-up: a few runs one at a time, so the first second of the load is not the JIT's.
  const warmIds: string[] = [];
  for (let i = 0; i < WARM_UP; i++) {
    const res = await request(base, "POST", "/api/runs", START_BODY);
    if (res.status !== 201) throw new Error(`warm-up: POST /api/runs answered ${res.status} ${res.body}`);
    warmIds.push((JSON.parse(res.body) as { run: { id: string } }).run.id);
  }
  for (const id of warmIds) {
    for (let i = 0; ; i++) {
      const ts = await transitionsOf(base, id);
      if (FINAL.has(ts.at(-1)?.to ?? "")) break;
      if (i > 200) throw new Error(`warm-up: run ${id} did not finish`);
      await sleep(50);
    }
  }

  // The clients connect and get their `ready`.
  const tConnect = performance.now();
  clients = Array.from({ length: CLIENTS }, (_, i) => EventClient.open(base, i));
  const connected = await Promise.race([
    Promise.all(clients.map((c) => c.ready)).then(() => true),
    deadline(30_000).then(() => false),
  ]);
  if (!connected) {
    const notReady = clients.filter((c) => c.boot === undefined);
    throw new Error(
      `${notReady.length} of ${CLIENTS} clients got no ready event within 30 s (${notReady[0]?.dropped ?? "no error"})`,
    );
  }
  console.log(
    `${n(CLIENTS)} clients on GET /api/events, all ready in ${fmt(performance.now() - tConnect)} ms; ${n(WARM_UP)} warm-up runs done before`,
  );
  console.log(
    `load: POST /api/runs report_builder/build at ${RATE}/s for ${SECONDS} s, open loop (${n(RATE * SECONDS)} requests)\n`,
  );

  // The load: open loop, each request at its time on the schedule.
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  const elu0 = performance.eventLoopUtilization();
  const serverCpu0 = cpuSecondsOf(pid);
  const ownCpu0 = process.cpuUsage();
  const total = Math.round(RATE * SECONDS);
  const starts: Start[] = [];
  const inFlight: Promise<void>[] = [];
  let maxInFlight = 0;
  let open = 0;
  const startOne = async (scheduled: number): Promise<void> => {
    const sent = performance.now();
    open++;
    maxInFlight = Math.max(maxInFlight, open);
    const start: Start = { lag: sent - scheduled, latency: Number.NaN, sentAt: wallNow(), status: 0 };
    starts.push(start);
    try {
      const res = await request(base, "POST", "/api/runs", START_BODY);
      start.latency = performance.now() - sent;
      start.status = res.status;
      if (res.status === 201) start.runId = (JSON.parse(res.body) as { run: { id: string } }).run.id;
      else start.error = `${res.status} ${res.body.slice(0, 200)}`;
    } catch (error) {
      start.latency = performance.now() - sent;
      start.error = String(error);
    } finally {
      open--;
    }
  };
  const tLoad = performance.now();
  let sendMs = 0;
  await new Promise<void>((resolve) => {
    let next = 0;
    const tick = () => {
      const now = performance.now();
      while (next < total && tLoad + (next * 1000) / RATE <= now) {
        inFlight.push(startOne(tLoad + (next * 1000) / RATE));
        next++;
      }
      if (next >= total) {
        sendMs = performance.now() - tLoad;
        resolve();
      } else setTimeout(tick, Math.max(0, tLoad + (next * 1000) / RATE - performance.now()));
    };
    tick();
  });
  await Promise.all(inFlight);
  const loadMs = performance.now() - tLoad;
  const lastResponseAt = wallNow();
  const serverCpu = (cpuSecondsOf(pid) ?? Number.NaN) - (serverCpu0 ?? Number.NaN);
  const ownCpuUs = process.cpuUsage(ownCpu0);
  const ownCpu = (ownCpuUs.user + ownCpuUs.system) / 1e6;
  loopDelay.disable();
  const elu = performance.eventLoopUtilization(elu0).utilization;

  // Every started run to its end, read from its transition log.
  const runIds = starts.flatMap((s) => (s.runId ? [s.runId] : []));
  const log = new Map<string, Transition[]>();
  const tSettle = performance.now();
  let unsettled = runIds;
  while (unsettled.length > 0 && performance.now() - tSettle < 120_000) {
    const still: string[] = [];
    await eachLimited(unsettled, 16, async (id) => {
      const ts = await transitionsOf(base, id);
      if (FINAL.has(ts.at(-1)?.to ?? "")) log.set(id, ts);
      else still.push(id);
    });
    unsettled = still;
    if (unsettled.length > 0) await sleep(250);
  }
  const lastCompletedAt = Math.max(...[...log.values()].map((ts) => ts.at(-1)?.at ?? 0));
  const expectedPerClient = runIds.reduce((sum, id) => sum + (log.get(id)?.length ?? 0), 0);

  // The clients catch up: until each has as many transitions of these runs as the logs hold, or 10 s without news.
  const startedSet = new Set(runIds);
  const countOf = (c: EventClient) => {
    let sum = 0;
    for (const [id, ids] of c.runs) if (startedSet.has(id)) sum += ids.length;
    return sum;
  };
  let lastTotal = -1;
  let lastChange = performance.now();
  for (;;) {
    const counts = clients.map(countOf);
    if (counts.every((c) => c >= expectedPerClient)) break;
    const sum = counts.reduce((a, b) => a + b, 0);
    if (sum !== lastTotal) {
      lastTotal = sum;
      lastChange = performance.now();
    } else if (performance.now() - lastChange > 10_000) break;
    await sleep(100);
  }
  await sleep(500); // anything late (a duplicate) still arrives to be counted

  // Figures.
  const ok = starts.filter((s) => s.status === 201);
  const errors = starts.filter((s) => s.status !== 201);
  const row = (label: string, v: number[], unit = "ms") => {
    const p = percentiles(v);
    const max = v.reduce((a, b) => Math.max(a, b), Number.NEGATIVE_INFINITY);
    console.log(
      `   ${label.padEnd(44)}${[p.p50, p.p95, p.p99, max].map((x) => fmt(x).padStart(9)).join("")}  ${unit}  (${n(v.length)})`,
    );
  };
  console.log(`   ${"".padEnd(44)}${["p50", "p95", "p99", "max"].map((h) => h.padStart(9)).join("")}`);
  row(
    "POST /api/runs: send → response",
    starts.map((s) => s.latency),
  );
  row(
    "  the same, from its time on the schedule",
    starts.map((s) => s.latency + s.lag),
  );
  row(
    "  lateness of the generator in sending",
    starts.map((s) => s.lag),
  );
  const logged = ok.flatMap((s) => {
    const ts = s.runId === undefined ? undefined : log.get(s.runId);
    return ts?.length === 3 ? [{ s, ts: ts.map((t) => t.at) as [number, number, number] }] : [];
  });
  row(
    "  send → PENDING recorded (`at`)",
    logged.map(({ s, ts }) => ts[0] - s.sentAt),
  );
  row(
    "  PENDING → RUNNING (claimed)",
    logged.map(({ ts }) => ts[1] - ts[0]),
  );
  row(
    "  RUNNING → COMPLETED",
    logged.map(({ ts }) => ts[2] - ts[1]),
  );
  row(
    "  COMPLETED → response read",
    logged.map(({ s, ts }) => s.sentAt + s.latency - ts[2]),
  );
  row("event delivery: transition `at` → client read", delivery);
  for (const [to, v] of deliveryTo) row(`  of transitions to ${to}`, v);
  // The histogram's figures include its 1 ms timer.
  const beyondTimer = (ns: number) => fmt(Math.max(0, ns / 1e6 - 1));
  console.log(
    `   generator (this process): event loop busy ${fmt(elu * 100)}% of the load; its delay p50 ${beyondTimer(loopDelay.percentile(50))} ms,` +
      ` p99 ${beyondTimer(loopDelay.percentile(99))} ms, max ${beyondTimer(loopDelay.max)} ms (the clients' read times include it)`,
  );
  console.log(
    `   start requests: ${n(starts.length)} sent in ${fmt(sendMs / 1000)} s (${fmt(starts.length / (sendMs / 1000))}/s), the last answered ${fmt((loadMs - sendMs) / 1000)} s after;` +
      ` ${n(ok.length)} answered 201, ${n(errors.length)} errors; at most ${n(maxInFlight)} in flight`,
  );
  const errorKinds = new Map<string, number>();
  for (const e of errors) {
    const kind = e.error ?? String(e.status);
    errorKinds.set(kind, (errorKinds.get(kind) ?? 0) + 1);
  }
  for (const [kind, count] of errorKinds) console.log(`     ${n(count)} × ${kind}`);
  const byState = new Map<string, number>();
  for (const id of runIds) {
    const state = log.get(id)?.at(-1)?.to ?? "not finished";
    byState.set(state, (byState.get(state) ?? 0) + 1);
  }
  console.log(
    `   runs started ${n(runIds.length)}: ${[...byState].map(([s, c]) => `${n(c)} ${s}`).join(", ")}; the last COMPLETED ${fmt(lastCompletedAt - lastResponseAt)} ms after the last start's response`,
  );
  console.log(
    `   CPU during the load: server ${fmt((serverCpu / (loadMs / 1000)) * 100)}% of a core, generator ${fmt((ownCpu / (loadMs / 1000)) * 100)}% (of ${cpu.length} cores: ${cpu.length * 100}%); server rss ${rssOf(pid)}`,
  );
  const lastRead = clients.reduce((max, c) => Math.max(max, c.lastReadAt), 0);
  console.log(
    `   the last client read its last transition ${fmt(lastRead - lastCompletedAt)} ms after the last COMPLETED\n`,
  );

  // The check: every client, every started run, every transition, once, in order, as logged.
  let logProblems = 0;
  for (const id of runIds) {
    const ts = log.get(id);
    const shapeOk =
      ts !== undefined &&
      ts.length === EXPECTED_STATES.length &&
      ts.every((t, i) => t.id === i + 1 && t.to === EXPECTED_STATES[i] && t.runId === id);
    if (!shapeOk) {
      logProblems++;
      if (logProblems <= 5)
        console.log(
          `   run ${id}: its log is ${ts ? ts.map((t) => `#${t.id} ${t.to}`).join(", ") : "unfinished"}, not #1 PENDING, #2 RUNNING, #3 COMPLETED`,
        );
    }
  }
  let exact = 0;
  let missing = 0;
  let duplicates = 0;
  let outOfOrder = 0;
  let unknownIds = 0;
  let runsIncomplete = 0;
  let differFromLog = 0;
  const examples: string[] = [];
  for (const c of clients) {
    for (const id of runIds) {
      const ts = log.get(id) ?? [];
      const got = c.runs.get(id) ?? [];
      const seen = new Set<number>();
      let prev = 0;
      for (const tid of got) {
        if (seen.has(tid)) duplicates++;
        else if (tid < prev) outOfOrder++;
        if (tid < 1 || tid > ts.length) unknownIds++;
        seen.add(tid);
        prev = Math.max(prev, tid);
      }
      let lacking = 0;
      for (const t of ts) if (!seen.has(t.id)) lacking++;
      missing += lacking;
      if (lacking > 0) runsIncomplete++;
      if (got.length === ts.length && got.every((tid, i) => tid === i + 1)) exact += got.length;
      else if (examples.length < 5)
        examples.push(`client ${c.index}, run ${id}: got [${got.join(", ")}] of ${ts.length}`);
    }
  }
  for (const id of runIds) {
    for (const t of log.get(id) ?? []) {
      const first = firstSeen.get(`${id}#${t.id}`);
      if (first && (first.at !== t.at || first.from !== t.from || first.to !== t.to)) differFromLog++;
    }
  }
  const expected = CLIENTS * expectedPerClient;
  const received = clients.reduce((sum, c) => sum + countOf(c), 0);
  const other = clients.reduce((sum, c) => sum + c.received, 0) - received;
  const differing = clients.reduce((sum, c) => sum + c.differing, 0);
  const resyncs = clients.reduce((sum, c) => sum + c.resyncs, 0);
  const seqBreaks = clients.reduce((sum, c) => sum + c.seqBreaks, 0);
  const dropped = clients.filter((c) => c.dropped !== undefined);
  console.log(
    `no event missed? ${n(CLIENTS)} clients × ${n(runIds.length)} runs × their logged transitions (${n(expectedPerClient)} per client) = ${n(expected)} expected`,
  );
  console.log(
    `   received ${n(received)}; exactly once and in order ${n(exact)}; missing ${n(missing)} (in ${n(runsIncomplete)} client-runs);` +
      ` duplicates ${n(duplicates)}; out of order ${n(outOfOrder)}; ids not in the log ${n(unknownIds)}`,
  );
  console.log(
    `   copies differing from another client's ${n(differing)}; first copies differing from GET /api/runs/:id/transitions ${n(differFromLog)};` +
      ` runs whose log is not PENDING, RUNNING, COMPLETED (1..3) ${n(logProblems)}`,
  );
  console.log(
    `   feed sequence breaks ${n(seqBreaks)}; streams restarted (a second ready) ${n(resyncs)}; connections dropped ${n(dropped.length)}` +
      `${dropped[0] ? ` (${dropped[0].dropped})` : ""}; transitions of other runs ${n(other)}`,
  );
  for (const e of examples) console.log(`   e.g. ${e}`);
  const pass =
    runIds.length > 0 &&
    unsettled.length === 0 &&
    exact === expected &&
    received === expected &&
    missing === 0 &&
    duplicates === 0 &&
    outOfOrder === 0 &&
    unknownIds === 0 &&
    differing === 0 &&
    differFromLog === 0 &&
    logProblems === 0 &&
    seqBreaks === 0 &&
    resyncs === 0 &&
    dropped.length === 0;
  console.log(
    pass
      ? `PASS: each of the ${n(CLIENTS)} clients received every transition of the ${n(runIds.length)} runs exactly once, in order`
      : `FAIL: events were missed, repeated or reordered (see above)${runIds.length === 0 ? "; no run was started" : ""}`,
  );
  if (!pass) exitCode = 1;
} catch (error) {
  console.error(`server-load: ${error instanceof Error ? error.message : String(error)}`);
  if (server) console.error(server.stderr());
  exitCode = 1;
} finally {
  for (const c of clients) c.close();
  agent.destroy();
  if (server) console.log(`\ncairn dev ${await stopServer(server.child)}`);
  rmSync(dir, { recursive: true, force: true });
}
process.exitCode = exitCode;
