/**
 * Many runs at once on SQLite: R runs × S trivial steps (default 50 × 20) started together in
 * one process (a Runtime with its worker, as an embedded application runs), on `durability`
 * "machine" and "process", at the worker's default concurrency and with one slot per run; beside
 * LangGraph's SqliteSaver (durability "sync", synchronous=FULL: each step on disk before the next,
 * what "machine" promises) when bench/peers is installed, R graphs invoked together on one file.
 *
 * Each batch runs on the same file as the batches before it (after 3 warm-up batches); the systems'
 * batches are interleaved, so that a noisy moment falls on all of them. Prints runs/s and steps/s
 * per system: the mean and the median over batches, and the ratios of the medians.
 *
 *   npm run bench:sqlite                                  # builds dist/, 50 × 20, 10 batches
 *   npm run bench:sqlite -- --runs 50 --steps 20 --batches 10
 *   npm run bench:sqlite -- --baseline ../cairn-before   # also a build of another checkout ("before")
 *
 * With `--baseline <dir>`, the dist/ of another checkout (built: `npx tsc -p tsconfig.build.json`)
 * runs "machine" at the default concurrency in the same batches, so that before and after meet the
 * same noise.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import * as cairn from "cairn";
import * as cairnSqlite from "cairn/sqlite";
import { printGrid } from "./report.ts";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "50" },
    steps: { type: "string", default: "20" },
    batches: { type: "string", default: "10" },
    "skip-peers": { type: "boolean", default: false },
    baseline: { type: "string" },
  },
});
const RUNS = Number(values.runs);
const STEPS = Number(values.steps);
const BATCHES = Number(values.batches);
const WARM_UP = 3;
const dir = mkdtempSync(join(tmpdir(), "cairn-bench-sqlite-"));

type Cairn = { index: typeof cairn; sqlite: typeof cairnSqlite };
const current: Cairn = { index: cairn, sqlite: cairnSqlite };

const workflowAgent = ({ index }: Cairn) =>
  index.defineAgent({
    name: "sqlitebench",
    tools: { noop: index.defineTool({ run: (_ctx, { i }: { i: number }) => i }) },
    workflows: {
      async steps(ctx, { n }: { n: number }) {
        let sum = 0;
        for (let i = 0; i < n; i++) sum += await ctx.tool("noop", { i });
        return sum;
      },
    },
  });

/** A system under test: opened once, then one batch of R runs at a time (ms per batch). */
interface System {
  label: string;
  batch(): Promise<number>;
  close(): Promise<void>;
}

async function cairnSystem(
  durability: "machine" | "process",
  concurrency: number | undefined,
  build: Cairn = current,
  name = "cairn",
): Promise<System> {
  const agent = workflowAgent(build);
  const backend = new build.sqlite.SqliteBackend({
    path: join(dir, `${name}-${durability}-${concurrency ?? "default"}.db`),
    durability,
  });
  const runtime = new build.index.Runtime({
    agents: [agent],
    backend,
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    worker: concurrency === undefined ? {} : { concurrency },
  });
  await runtime.start();
  const expected = (STEPS * (STEPS - 1)) / 2;
  return {
    label: `${name} SQLite "${durability}", concurrency ${concurrency ?? "default"}`,
    async batch() {
      const t0 = performance.now();
      const handles = await Promise.all(Array.from({ length: RUNS }, () => runtime.run(agent, "steps", { n: STEPS })));
      const sums = await Promise.all(handles.map((h) => h.result()));
      const ms = performance.now() - t0;
      if (sums.some((s) => s !== expected)) throw new Error("cairn: wrong result");
      return ms;
    },
    close: () => runtime.shutdown(),
  };
}

/** LangGraph, when bench/peers is installed (imported by a computed path, as step-overhead.ts does). */
async function langGraphSystem(): Promise<System | undefined> {
  const path = "./peers/langgraph-concurrent-peer.ts";
  try {
    const { concurrentPeer } = (await import(path)) as {
      concurrentPeer: (file: string, runs: number, steps: number) => Promise<System>;
    };
    return await concurrentPeer(join(dir, "langgraph.db"), RUNS, STEPS);
  } catch (err) {
    console.log(`LangGraph not measured: ${(err as Error).message.split("\n")[0]} (npm --prefix bench/peers install)`);
    return undefined;
  }
}

/** The dist/ of another checkout. */
async function loadBuild(checkout: string): Promise<Cairn> {
  const at = (file: string) => pathToFileURL(resolve(checkout, "dist", file)).href;
  return { index: await import(at("index.js")), sqlite: await import(at("sqlite.js")) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

const systems: System[] = [
  await cairnSystem("machine", undefined),
  await cairnSystem("machine", RUNS),
  await cairnSystem("process", undefined),
  await cairnSystem("process", RUNS),
];
const baseline = values.baseline
  ? await cairnSystem("machine", undefined, await loadBuild(values.baseline), "before:")
  : undefined;
if (baseline) systems.push(baseline);
const peer = values["skip-peers"] ? undefined : await langGraphSystem();
if (peer) systems.push(peer);

const times = new Map<System, number[]>(systems.map((s) => [s, []]));
for (let b = 0; b < WARM_UP + BATCHES; b++) {
  process.stderr.write(`batch ${b + 1}/${WARM_UP + BATCHES}${b < WARM_UP ? " (warm-up)" : ""}\n`);
  for (const system of systems) {
    const ms = await system.batch();
    if (b >= WARM_UP) times.get(system)?.push(ms);
  }
}
for (const system of systems) await system.close();
rmSync(dir, { recursive: true, force: true });

console.log(
  `\nSQLite, ${RUNS} runs × ${STEPS} steps started together, ${BATCHES} batches after ${WARM_UP} warm-up;` +
    ` node ${process.version}, ${cpus().length} cores, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}\n`,
);
const stepsPerS = (ms: number) => (RUNS * STEPS * 1000) / ms;
const rows = systems.map((s) => {
  const ms = times.get(s) ?? [];
  return { s, medianSteps: stepsPerS(median(ms)), meanSteps: mean(ms.map(stepsPerS)), ms };
});
printGrid(
  ["", "steps/s median", "steps/s mean", "runs/s median", "batch ms median", "batch ms min–max"],
  rows.map((r) => [
    r.s.label,
    Math.round(r.medianSteps).toLocaleString("en-US"),
    Math.round(r.meanSteps).toLocaleString("en-US"),
    ((r.medianSteps / STEPS) | 0).toLocaleString("en-US"),
    median(r.ms).toFixed(1),
    `${Math.min(...r.ms).toFixed(1)}–${Math.max(...r.ms).toFixed(1)}`,
  ]),
);
const machineDefault = rows[0];
const lg = peer && rows.find((r) => r.s === peer);
console.log();
if (machineDefault && lg) {
  const ratio = machineDefault.medianSteps / lg.medianSteps;
  console.log(
    `cairn SQLite "machine" (default concurrency) / LangGraph: ${ratio.toFixed(2)}× (medians; goal ≥ 5×)${ratio >= 5 ? "" : " MISSED"}`,
  );
}
const before = baseline && rows.find((r) => r.s === baseline);
if (machineDefault && before) {
  const ratio = machineDefault.medianSteps / before.medianSteps;
  console.log(
    `cairn SQLite "machine" (default concurrency) / before (${values.baseline}): ${ratio.toFixed(2)}× (medians; goal ≥ 4×)${ratio >= 4 ? "" : " MISSED"}`,
  );
}
