/**
 * What a checkpoint costs. Runs a workflow of N trivial tools (default 1,000) and prints the
 * time per step for: a plain async function (no durability), InMemoryBackend, and SQLite with
 * `durability: "process"` and `"machine"` — beside the physical limit measured in the same
 * run: one bare synchronous SQLite commit (WAL, synchronous=FULL), the fsync a durable step
 * cannot avoid.
 *
 *   npm run bench                     # builds dist/, then 1,000 steps, 5 rounds
 *   npm run bench -- --steps 5000 --rounds 3
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import { defineAgent, defineTool, InMemoryBackend, Runtime, type RuntimeBackend, silentLogger } from "cairn";
import { SqliteBackend } from "cairn/sqlite";
import { percentiles, printTable, type Row } from "./report.ts";

const { values } = parseArgs({
  options: { steps: { type: "string", default: "1000" }, rounds: { type: "string", default: "5" } },
});
const STEPS = Number(values.steps);
const ROUNDS = Number(values.rounds);
const dir = mkdtempSync(join(tmpdir(), "cairn-bench-"));

/** Per-step gaps (µs) recorded inside the workflow, so percentiles are of real steps. */
let gaps: number[] = [];

const bench = defineAgent({
  name: "bench",
  tools: { noop: defineTool({ run: (_ctx, { i }: { i: number }) => i }) },
  workflows: {
    async steps(ctx, { n }: { n: number }) {
      let sum = 0;
      let last = performance.now();
      for (let i = 0; i < n; i++) {
        sum += await ctx.tool("noop", { i });
        const now = performance.now();
        gaps.push((now - last) * 1000);
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

async function runtimeRound(makeBackend: () => RuntimeBackend): Promise<number[]> {
  const runtime = new Runtime({ agents: [bench], backend: makeBackend(), logger: silentLogger });
  await runtime.start();
  await (await runtime.run(bench, "steps", { n: WARM_UP })).result();
  gaps = [];
  const handle = await runtime.run(bench, "steps", { n: STEPS });
  const sum = await handle.result();
  if (sum !== (STEPS * (STEPS - 1)) / 2) throw new Error(`wrong result ${sum}`);
  const steps = (await runtime.history(handle.id)).steps;
  if (steps.length !== STEPS || steps.some((s) => s.status !== "completed")) throw new Error("steps not journaled");
  await runtime.shutdown();
  return gaps;
}

function bareCommits(synchronous: "FULL" | "NORMAL", n: number): number[] {
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
    commit(`{"seq":${i},"result":${i}}`);
    out.push((performance.now() - t0) * 1000);
  }
  db.close();
  return out;
}

const samples: Record<string, number[][]> = {};
const add = (name: string, gapsUs: number[]) => {
  samples[name] ??= [];
  samples[name].push(gapsUs);
};
let sqliteSeq = 0;
const sqlite = (durability: "process" | "machine") => () =>
  new SqliteBackend({ path: join(dir, `cairn-${durability}-${sqliteSeq++}.db`), durability });

for (let round = 0; round < ROUNDS; round++) {
  add("bare commit, synchronous=FULL (limit)", bareCommits("FULL", STEPS));
  add("bare commit, synchronous=NORMAL", bareCommits("NORMAL", STEPS));
  add("plain async function (no durability)", await plainBaseline(STEPS));
  add("cairn InMemoryBackend", await runtimeRound(() => new InMemoryBackend()));
  add('cairn SQLite durability "process"', await runtimeRound(sqlite("process")));
  add('cairn SQLite durability "machine"', await runtimeRound(sqlite("machine")));
}
rmSync(dir, { recursive: true, force: true });

const rows: Row[] = Object.entries(samples).map(([name, rounds]) => {
  // Mean per round, then the median round: robust to one noisy round.
  const means = rounds.map((r) => r.reduce((a, b) => a + b, 0) / r.length).sort((a, b) => a - b);
  const median = means[Math.floor(means.length / 2)] ?? Number.NaN;
  return { name, meanUs: median, ...percentiles(rounds.flat()) };
});
const limit = rows.find((r) => r.name.includes("(limit)"))?.meanUs ?? Number.NaN;
printTable(rows, limit, { steps: STEPS, rounds: ROUNDS, dir });
