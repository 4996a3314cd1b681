/**
 * What a checkpoint costs. Runs a workflow of N trivial tools (default 1,000) and prints the
 * time per step for: a plain async function (no durability), InMemoryBackend, and SQLite with
 * `durability: "process"` and `"machine"` — beside the physical limit measured in the same
 * run: one bare synchronous SQLite commit (WAL, synchronous=FULL), the fsync a durable step
 * cannot avoid. With `--peers`, the same workflow also runs on DBOS (PostgreSQL) and LangGraph
 * (SqliteSaver) in every round; those live in bench/peers/, a separate package, so that they never
 * become dependencies of cairn. The rows "tracing on" run with an OpenTelemetry SDK registered
 * (bench/tracing-sdk.ts, spans dropped), the row "context manager only" with the SDK's context
 * manager alone; every other row runs with none (the API's no-op tracer). The notes add what
 * telemetry costs by itself (bench/telemetry-floor.ts): a step's calls with no SDK, and the SDK's
 * own cost for a traced step.
 *
 *   npm run bench                     # builds dist/, then 1,000 steps, 5 rounds
 *   npm run bench -- --steps 5000 --rounds 3
 *   npm run bench:peers               # installs bench/peers, then the same with --peers
 *   npm run bench:peers -- --rounds 3
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import {
  defineAgent,
  defineTool,
  InMemoryBackend,
  Runtime,
  type RuntimeBackend,
  ScriptedModel,
  silentLogger,
} from "cairn";
import { SqliteBackend } from "cairn/sqlite";
import type { LoadPeers, Peer } from "./peers/peer.ts";
import { percentiles, printTable, type Row } from "./report.ts";
import { noSdkCost, sdkFloor } from "./telemetry-floor.ts";
import { withContextManager, withTracing } from "./tracing-sdk.ts";

const { values } = parseArgs({
  options: {
    steps: { type: "string", default: "1000" },
    rounds: { type: "string", default: "5" },
    peers: { type: "boolean", default: false },
  },
});
const STEPS = Number(values.steps);
const ROUNDS = Number(values.rounds);
const dir = mkdtempSync(join(tmpdir(), "cairn-bench-"));

/**
 * Per-step gaps (µs) recorded inside the workflow, so percentiles are of real steps; recorded only
 * while a measured run has set it (never during warm-up), and detached when that run ends.
 */
let gaps: number[] | undefined;

const bench = defineAgent({
  name: "bench",
  tools: {
    noop: defineTool({ run: (_ctx, { i }: { i: number }) => i }),
    // An effect tool that reaches nothing: what its intent, key and receipt add to a step.
    effect_noop: defineTool({ effect: { idempotent: true }, run: (_ctx, { i }: { i: number }) => i }),
  },
  workflows: {
    async steps(ctx, { n, kind }: { n: number; kind?: StepKindUnderTest }) {
      let sum = 0;
      let last = performance.now();
      for (let i = 0; i < n; i++) {
        if (kind === "llm") sum += Number(await ctx.llm.generate({ prompt: String(i) })) * 0 + i;
        else sum += await ctx.tool(kind === "effect" ? "effect_noop" : "noop", { i });
        const now = performance.now();
        gaps?.push((now - last) * 1000);
        last = now;
      }
      return sum;
    },
  },
});

async function plainBaseline(n: number): Promise<number[]> {
  const noop = async (i: number) => i;
  const out: number[] = [];
  let last = performance.now();
  let sum = 0;
  for (let i = 0; i < n; i++) {
    sum += await noop(i);
    const now = performance.now();
    out.push((now - last) * 1000);
    last = now;
  }
  if (sum !== (n * (n - 1)) / 2) throw new Error("baseline miscounted");
  return out;
}

/**
 * Steps (or commits) made before measuring, so that both the bare commits and Cairn's are
 * measured on a database in its steady state: the WAL has wrapped once (SQLite checkpoints every
 * 1,000 pages) and fsync no longer pays for a growing file.
 */
const WARM_UP = 2500;

/*
 * No forced collection (`gc()`) before the measured runs: it made V8 throw away optimized code, so
 * each run began cold (the in-memory step measured 16–25 µs on average with it, 9.5–10 without;
 * its p50, 9 µs, did not move). A runtime that keeps running never pays that every thousand steps.
 */

/** What the measured workflow's steps are: plain tools, effect tools, or model calls. */
type StepKindUnderTest = "tool" | "effect" | "llm";

/** The model of the `llm` rows: no network, a fixed short answer, so the row is the step's own cost. */
const model = new ScriptedModel({ replies: ["0"] });

async function runtimeRound(makeBackend: () => RuntimeBackend, kind: StepKindUnderTest = "tool"): Promise<number[]> {
  const runtime = new Runtime({
    agents: [bench],
    backend: makeBackend(),
    logger: silentLogger,
    models: { default: model },
  });
  await runtime.start();
  await (await runtime.run(bench, "steps", { n: WARM_UP, kind })).result();
  const measured: number[] = [];
  gaps = measured;
  const handle = await runtime.run(bench, "steps", { n: STEPS, kind });
  const sum = await handle.result();
  gaps = undefined;
  if (sum !== (STEPS * (STEPS - 1)) / 2) throw new Error(`wrong result ${sum}`);
  const steps = (await runtime.history(handle.id)).steps;
  if (steps.length !== STEPS || steps.some((s) => s.status !== "completed")) throw new Error("steps not journaled");
  await runtime.shutdown();
  if (measured.length !== STEPS) throw new Error(`${measured.length} gaps for ${STEPS} steps`);
  return measured;
}

/** `perSample` commits timed together per sample: 2 bounds an effect step (its intent, then its result). */
function bareCommits(synchronous: "FULL" | "NORMAL", n: number, perSample = 1): number[] {
  const path = join(dir, `bare-${synchronous}-${Math.random().toString(36).slice(2)}.db`);
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${synchronous}`);
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
  const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
  const commit = db.transaction((v: string) => insert.run(v));
  for (let i = 0; i < WARM_UP; i++) commit(`{"seq":${i},"result":${i}}`);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    for (let c = 0; c < perSample; c++) commit(`{"seq":${i},"result":${i}}`);
    out.push((performance.now() - t0) * 1000);
  }
  db.close();
  return out;
}

/**
 * Runs `tasks` starting from task `round` (modulo their number): rows compared with each other take
 * turns at going first, so that what running first or after another costs (a cold JIT, the
 * previous database's writeback) is not always charged to the same row. Round 0 keeps their order,
 * which is the table's.
 */
async function rotated(round: number, tasks: Array<() => Promise<void>>): Promise<void> {
  for (let i = 0; i < tasks.length; i++) await tasks[(i + round) % tasks.length]?.();
}

/** " (met)" or " MISSED", after a goal. */
function verdict(met: boolean): string {
  return met ? " (met)" : " MISSED";
}

/**
 * A whole run on a warm runtime, from `runtime.run()` to its result, per step: what a run's start
 * (insert, claim, first transitions) and end (result, last transitions, listeners) add to its
 * steps. One sample per round (the run's wall time over its steps).
 */
async function wholeRunRound(): Promise<number[]> {
  const runtime = new Runtime({ agents: [bench], backend: new InMemoryBackend(), logger: silentLogger });
  await runtime.start();
  await (await runtime.run(bench, "steps", { n: WARM_UP })).result();
  const t0 = performance.now();
  const sum = await (await runtime.run(bench, "steps", { n: STEPS })).result();
  const perStep = ((performance.now() - t0) * 1000) / STEPS;
  if (sum !== (STEPS * (STEPS - 1)) / 2) throw new Error(`wrong result ${sum}`);
  await runtime.shutdown();
  return [perStep];
}

/** First line of an error, for the one line a peer that can't be measured gets. */
const why = (err: unknown) => (err instanceof Error ? err.message : String(err)).split("\n")[0];

/**
 * The peers, imported only with --peers and by a computed path, so that neither `npm run bench`
 * nor the type-check needs bench/peers installed.
 */
const PEER_MODULES = ["./peers/dbos-peer.ts", "./peers/langgraph-peer.ts"];
let peers: Peer[] = [];
if (values.peers) {
  for (const path of PEER_MODULES) {
    try {
      const { peers: load } = (await import(path)) as { peers: LoadPeers };
      peers.push(...(await load()));
    } catch (err) {
      console.log(`${path} not measured: ${why(err)} (npm run bench:peers installs bench/peers)`);
    }
  }
}

const samples: Record<string, number[][]> = {};
const add = (name: string, gapsUs: number[]) => {
  samples[name] ??= [];
  samples[name].push(gapsUs);
};
const TRACED_MEMORY = "cairn InMemoryBackend, tracing on (SDK, spans dropped)";
const CONTEXT_ONLY = "cairn InMemoryBackend, SDK's context manager only (no span)";
/** Per round: the telemetry loops of bench/telemetry-floor.ts, µs per step. */
const floors: Record<"noSdkApi" | "noSdkMetrics" | "sdkSpans" | "sdkWith", number[]> = {
  noSdkApi: [],
  noSdkMetrics: [],
  sdkSpans: [],
  sdkWith: [],
};
const TRACED_SQLITE = 'cairn SQLite "machine", tracing on (SDK, spans dropped)';
let sqliteSeq = 0;
const sqlite = (durability: "process" | "machine") => () =>
  new SqliteBackend({ path: join(dir, `cairn-${durability}-${sqliteSeq++}.db`), durability });

for (let round = 0; round < ROUNDS; round++) {
  process.stderr.write(`round ${round + 1}/${ROUNDS}\n`);
  add("bare commit, synchronous=FULL (limit)", bareCommits("FULL", STEPS));
  add("bare commit, synchronous=NORMAL", bareCommits("NORMAL", STEPS));
  add("plain async function (no durability)", await plainBaseline(STEPS));
  const memory = () => new InMemoryBackend();
  // Rows compared with each other run in an order that turns with the round: none always first.
  await rotated(round, [
    async () => add("cairn InMemoryBackend (within a run)", await runtimeRound(memory)),
    async () => add(CONTEXT_ONLY, await withContextManager(() => runtimeRound(memory))),
    async () => add(TRACED_MEMORY, await withTracing(() => runtimeRound(memory))),
  ]);
  add("cairn InMemoryBackend, whole run (run() to result)", await wholeRunRound());
  const noSdk = await noSdkCost();
  floors.noSdkApi.push(noSdk.apiUs);
  floors.noSdkMetrics.push(noSdk.metricsUs);
  const sdk = await withTracing(sdkFloor);
  floors.sdkSpans.push(sdk.spansUs);
  floors.sdkWith.push(sdk.withUs);
  add('cairn SQLite durability "process"', await runtimeRound(sqlite("process")));
  await rotated(round, [
    async () => add('cairn SQLite durability "machine"', await runtimeRound(sqlite("machine"))),
    async () => add(TRACED_SQLITE, await withTracing(() => runtimeRound(sqlite("machine")))),
  ]);
  add("two bare commits, synchronous=FULL (effect limit)", bareCommits("FULL", STEPS, 2));
  add('cairn SQLite "machine", effect tool', await runtimeRound(sqlite("machine"), "effect"));
  add('cairn SQLite "machine", llm step (scripted model)', await runtimeRound(sqlite("machine"), "llm"));
  for (const peer of peers) {
    try {
      add(peer.label, await peer.run(STEPS, WARM_UP));
    } catch (err) {
      console.log(`${peer.label} not measured: round ${round + 1} failed: ${why(err)}`);
      peers = peers.filter((p) => p !== peer);
      delete samples[peer.label];
    }
  }
}
rmSync(dir, { recursive: true, force: true });

const rows: Row[] = Object.entries(samples).map(([name, rounds]) => {
  // Mean per round, then the median round: robust to one noisy round.
  const means = rounds.map((r) => r.reduce((a, b) => a + b, 0) / r.length).sort((a, b) => a - b);
  const median = means[Math.floor(means.length / 2)] ?? Number.NaN;
  return { name, meanUs: median, ...percentiles(rounds.flat()) };
});
const limit = rows.find((r) => r.name.includes("(limit)"))?.meanUs ?? Number.NaN;
const mean = (part: string) => rows.find((r) => r.name.includes(part))?.meanUs ?? Number.NaN;
const notes =
  peers.length > 0
    ? [...new Set(peers.map((p) => p.note))]
    : ["DBOS and LangGraph were not measured in this run: npm run bench:peers measures them beside Cairn."];
const machine = mean('cairn SQLite durability "machine"') / limit;
notes.push(
  `SQLite "machine": ${machine.toFixed(2)}× one synchronous commit (goal: within 1.5×)${verdict(machine <= 1.5)}.`,
);
const memory = mean("cairn InMemoryBackend (");
notes.push(`InMemoryBackend: ${memory.toFixed(1)} µs/step within a run (goal: under 10)${verdict(memory < 10)}.`);
const whole = mean("whole run");
notes.push(
  `InMemoryBackend, a whole run of ${STEPS} steps from run() to its result: ${whole.toFixed(1)} µs/step (goal: under 15)${verdict(whole < 15)}.`,
);
const effect = mean("effect tool") / mean("(effect limit)");
notes.push(
  `Effect step: ${effect.toFixed(2)}× two synchronous commits (goal: within 1.5×)${verdict(effect <= 1.5)}. Its intent is` +
    " durable before it runs; in a sequence it carries the previous step's result, so it is one commit per step.",
);
const toolRow = rows.find((r) => r.name === 'cairn SQLite durability "machine"');
const llmRow = rows.find((r) => r.name.includes("llm step"));
const llm = (key: "meanUs" | "p50") => (llmRow?.[key] ?? Number.NaN) / (toolRow?.[key] ?? Number.NaN);
notes.push(
  `llm step: ${llm("meanUs").toFixed(2)}× a tool step on the same backend, ${llm("p50").toFixed(2)}× at p50 (goal: within 1.2×)` +
    `${verdict(llm("meanUs") <= 1.2)}. It journals the request and the whole response (text, usage, model) and prices the` +
    " call; the model itself answers at once.",
);
for (const [traced, untraced] of [
  [TRACED_MEMORY, "cairn InMemoryBackend (within a run)"],
  [TRACED_SQLITE, 'cairn SQLite durability "machine"'],
]) {
  const tracedRow = rows.find((r) => r.name === traced);
  const untracedRow = rows.find((r) => r.name === untraced);
  const on = tracedRow?.meanUs ?? Number.NaN;
  const off = untracedRow?.meanUs ?? Number.NaN;
  const overhead = on / off - 1;
  const p50 = (tracedRow?.p50 ?? Number.NaN) / (untracedRow?.p50 ?? Number.NaN) - 1;
  notes.push(
    `Tracing on, ${untraced}: +${(on - off).toFixed(1)} µs/step, ${(100 * overhead).toFixed(1)}% (p50 ${(100 * p50).toFixed(1)}%; goal: at most 10%)${verdict(overhead <= 0.1)}.`,
  );
}
notes.push(...telemetryNotes());
printTable(rows, limit, { steps: STEPS, rounds: ROUNDS, dir }, notes);

/**
 * What telemetry costs by itself: with no SDK (the goal: nothing measurable), and the floor of a
 * traced step. The floor is worked out at p50: a run's mean is swayed by a few pauses (a young
 * generation collection of a few ms, another process) that land in one row's window and not in
 * another's; the goals above stay on the mean. A share of "a step" is of its p50 too (the smaller,
 * so the stricter, figure).
 */
function telemetryNotes(): string[] {
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
  const p50 = (name: string) => rows.find((r) => r.name === name)?.p50 ?? Number.NaN;
  const api = median(floors.noSdkApi);
  const registry = median(floors.noSdkMetrics);
  const stepP50 = p50("cairn InMemoryBackend (within a run)");
  const pct = (us: number, of = stepP50) => `${((100 * us) / of).toFixed(1)}%`;
  const managerUs = p50(CONTEXT_ONLY) - stepP50;
  const spansUs = median(floors.sdkSpans);
  const withUs = median(floors.sdkWith);
  const floorUs = managerUs + spansUs + withUs;
  const tracedUs = p50(TRACED_MEMORY) - stepP50;
  return [
    `No SDK registered (every other row): a step's calls to the OpenTelemetry API (four span calls that return at once,` +
      ` two Meter lookups) take ${api.toFixed(3)} µs, ${pct(api)} of an in-memory step at p50 (goal: no measurable cost, under 1%)` +
      `${verdict(api / stepP50 < 0.01)}; its figures for /metrics (the in-process registry, no SDK needed) ${registry.toFixed(3)} µs (${pct(registry)}).`,
    `The floor of a traced in-memory step, at p50 (${stepP50.toFixed(1)} µs untraced, +${tracedUs.toFixed(1)} µs traced): the SDK's` +
      ` context manager alone +${managerUs.toFixed(1)} µs (AsyncLocalStorage's hook on every promise; row "context manager only"),` +
      ` its two nested spans started and ended ${spansUs.toFixed(1)} µs and its context.with ${withUs.toFixed(2)} µs (loops of the` +
      ` bare calls): ${floorUs.toFixed(1)} µs, ${pct(floorUs, stepP50)} of the step` +
      `${floorUs / stepP50 > 0.1 ? ", above the 10% goal before Cairn adds anything" : ""}; Cairn's own part (span names, its` +
      ` ids as attributes, two contexts) is the rest, about ${(tracedUs - floorUs).toFixed(1)} µs.`,
  ];
}
