/**
 * Where the worker's default concurrency comes from (DESIGN §4 *Worker concurrency*): one worker
 * process drives R runs started together at each concurrency of a sweep, on SQLite "machine" (the
 * embedded default) and on PostgreSQL, under two workloads:
 *
 * - "trivial": each run makes S tool steps that return at once, so the database's commits and
 *   Cairn's own CPU are all there is (the worst case for a high concurrency: more runs at once
 *   only add contention);
 * - "waiting": each run makes W tool steps that each wait T ms (a model or API call stands in),
 *   as agents mostly do, where runs driven at once overlap their waits.
 *
 * The concurrencies run interleaved, round after round, on the same files and database; the
 * median over rounds is printed as steps/s with its share of the best concurrency of that row, and
 * the median time from `run()` to the result. The rule it states: the default is the smallest
 * concurrency in the sweep that reaches 80% of the best throughput on the trivial workload on both
 * backends, and gives the waiting workload at least half of its best (a worker holding a run
 * takes it from the other workers, so the default is not as high as the waiting workload alone
 * would want). The bench prints which concurrency the rule picks and whether it is the default.
 *
 *   npm run bench:concurrency
 *   npm run bench:concurrency -- --runs 100 --rounds 5 --sweep 4,8,16,32,64,128
 *
 * PostgreSQL: `CAIRN_BENCH_PG_URL` (default postgresql://postgres@127.0.0.1:5432/postgres); a
 * database of its own is created and dropped. Without a server, SQLite alone is measured, said so.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_WORKER_CONCURRENCY, defineAgent, defineTool, Runtime, silentLogger } from "cairn";
import { SqliteBackend } from "cairn/sqlite";
import { printGrid } from "./report.ts";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "100" },
    steps: { type: "string", default: "20" },
    "wait-steps": { type: "string", default: "5" },
    "wait-ms": { type: "string", default: "25" },
    rounds: { type: "string", default: "5" },
    sweep: { type: "string", default: "4,8,16,32,64,128" },
  },
});
const RUNS = Number(values.runs);
const STEPS = Number(values.steps);
const WAIT_STEPS = Number(values["wait-steps"]);
const WAIT_MS = Number(values["wait-ms"]);
const ROUNDS = Number(values.rounds);
const SWEEP = values.sweep.split(",").map(Number);
const PG_URL = process.env.CAIRN_BENCH_PG_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const DEFAULT = DEFAULT_WORKER_CONCURRENCY;

const agent = defineAgent({
  name: "concurrencybench",
  tools: {
    noop: defineTool({ run: (_ctx, { i }: { i: number }) => i }),
    call: defineTool({
      run: async (_ctx, { i }: { i: number }) => {
        await new Promise((resolve) => setTimeout(resolve, WAIT_MS));
        return i;
      },
    }),
  },
  workflows: {
    async trivial(ctx, { n }: { n: number }) {
      let sum = 0;
      for (let i = 0; i < n; i++) sum += await ctx.tool("noop", { i });
      return sum;
    },
    async waiting(ctx, { n }: { n: number }) {
      let sum = 0;
      for (let i = 0; i < n; i++) sum += await ctx.tool("call", { i });
      return sum;
    },
  },
});

type Workload = "trivial" | "waiting";
const stepsOf = (w: Workload) => (w === "trivial" ? STEPS : WAIT_STEPS);

/** One runtime (a worker at one concurrency) on one backend. */
interface Cell {
  backend: "SQLite" | "PostgreSQL";
  concurrency: number;
  runtime: Runtime;
}

/** Starts R runs together and waits for them all: ms for the batch and each run's ms to its result. */
async function batch(cell: Cell, workload: Workload): Promise<{ ms: number; runMs: number[] }> {
  const n = stepsOf(workload);
  const t0 = performance.now();
  const handles = await Promise.all(Array.from({ length: RUNS }, () => cell.runtime.run(agent, workload, { n })));
  const runMs = await Promise.all(
    handles.map(async (h) => {
      if ((await h.result()) !== (n * (n - 1)) / 2) throw new Error("wrong result");
      return performance.now() - t0;
    }),
  );
  return { ms: performance.now() - t0, runMs };
}

/** A PostgreSQL database of the bench's own, or undefined (said) when no server answers. */
async function pgDatabase(): Promise<{ url: string; drop(): Promise<void> } | undefined> {
  try {
    const { default: pg } = await import("pg");
    const admin = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
    await admin.connect();
    const name = `cairn_concbench_${randomBytes(3).toString("hex")}`;
    await admin.query(`CREATE DATABASE "${name}"`);
    const url = new URL(PG_URL);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      async drop() {
        await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        await admin.end();
      },
    };
  } catch (error) {
    console.log(`PostgreSQL not measured: ${(error as Error).message} (set CAIRN_BENCH_PG_URL)`);
    return undefined;
  }
}

const dir = mkdtempSync(join(tmpdir(), "cairn-bench-concurrency-"));
const pgDb = await pgDatabase();
const cells: Cell[] = [];
for (const concurrency of SWEEP) {
  const sqlite = new SqliteBackend({ path: join(dir, `c${concurrency}.db`) });
  cells.push({ backend: "SQLite", concurrency, runtime: await started(sqlite, concurrency) });
}
if (pgDb) {
  const { PostgresBackend } = await import("cairn/postgres");
  for (const concurrency of SWEEP) {
    const backend = new PostgresBackend({ connectionString: pgDb.url, schema: `c${concurrency}` });
    cells.push({ backend: "PostgreSQL", concurrency, runtime: await started(backend, concurrency) });
  }
}

async function started(backend: Runtime["backend"], concurrency: number): Promise<Runtime> {
  const runtime = new Runtime({ agents: [agent], backend, logger: silentLogger, worker: { concurrency } });
  await runtime.start();
  return runtime;
}

const WORKLOADS: Workload[] = ["trivial", "waiting"];
const results = new Map<string, { ms: number[]; runP50: number[] }>();
const keyOf = (c: Cell, w: Workload) => `${c.backend}/${w}/${c.concurrency}`;
for (let round = 0; round <= ROUNDS; round++) {
  process.stderr.write(`round ${round}/${ROUNDS}${round === 0 ? " (warm-up)" : ""}\n`);
  for (const workload of WORKLOADS) {
    for (const cell of cells) {
      const { ms, runMs } = await batch(cell, workload);
      if (round === 0) continue;
      const entry = results.get(keyOf(cell, workload)) ?? { ms: [], runP50: [] };
      entry.ms.push(ms);
      entry.runP50.push(median(runMs));
      results.set(keyOf(cell, workload), entry);
    }
  }
}
for (const cell of cells) await cell.runtime.shutdown();
await pgDb?.drop();
rmSync(dir, { recursive: true, force: true });

function median(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
}

console.log(
  `\nWorker concurrency sweep: ${RUNS} runs started together; "trivial" ${STEPS} steps that return at once, "waiting" ${WAIT_STEPS} steps of ${WAIT_MS} ms each;` +
    ` median of ${ROUNDS} rounds after a warm-up; one worker process; node ${process.version}, ${cpus().length} cores, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}\n`,
);
const share = new Map<string, number>();
const rows: string[][] = [];
for (const backend of ["SQLite", "PostgreSQL"] as const) {
  for (const workload of WORKLOADS) {
    const line = SWEEP.map((c) => {
      const r = results.get(`${backend}/${workload}/${c}`);
      return r
        ? { c, stepsPerS: (RUNS * stepsOf(workload) * 1000) / median(r.ms), runP50: median(r.runP50) }
        : undefined;
    });
    if (line.some((x) => x === undefined)) continue;
    const best = Math.max(...line.map((x) => x?.stepsPerS ?? 0));
    for (const x of line) {
      if (!x) continue;
      share.set(`${backend}/${workload}/${x.c}`, x.stepsPerS / best);
      rows.push([
        `${backend === "SQLite" ? 'SQLite "machine"' : "PostgreSQL"}, ${workload}, concurrency ${x.c}${x.c === DEFAULT ? " (default)" : ""}`,
        Math.round(x.stepsPerS).toLocaleString("en-US"),
        `${Math.round((100 * x.stepsPerS) / best)}%`,
        x.runP50.toFixed(0),
      ]);
    }
  }
}
printGrid(["", "steps/s median", "of the row's best", "run ms p50"], rows);

const backends = [...new Set(cells.map((c) => c.backend))];
const fits = (c: number) =>
  backends.every((b) => (share.get(`${b}/trivial/${c}`) ?? 0) >= 0.8 && (share.get(`${b}/waiting/${c}`) ?? 0) >= 0.5);
const pick = SWEEP.find(fits);
console.log(
  `\nrule: the smallest concurrency with ≥ 80% of the best "trivial" throughput and ≥ 50% of the best "waiting" throughput on ${backends.join(" and ")}: ` +
    `${pick ?? "none in the sweep"}; the default is ${DEFAULT}${pick === DEFAULT ? " (the rule's pick)" : " MISSED (not the rule's pick)"}.`,
);
