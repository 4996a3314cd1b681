/**
 * Claim throughput with concurrency keys on vs off (issue 28, goal: at most 20 % less with keys).
 *
 * For each backend (PostgreSQL, SQLite) and round, a fresh schema (file) gets N PENDING runs
 * (default 2,000), then C claimers in this process (default 4) claim them as a worker does until
 * none is left: PostgreSQL with `claimRuns` (batches of 10, each PENDING run moved to RUNNING in
 * the claim), SQLite with `claimRun`. "off": runs without a key; "keys": the runs spread over K
 * keys (default 50) with a limit high enough never to bind (so both claim the same runs, and the
 * difference is the cost of the keyed claim: the per-key lock and count). Runs claimed per second,
 * median of R rounds (default 3; off and keys alternate within each round).
 *
 *   npm run bench:flow
 *   npm run bench:flow -- --runs 5000 --claimers 8 --keys 20 --rounds 5 --skip-sqlite
 *   CAIRN_BENCH_PG_URL=postgresql://user@host:5432/postgres node --import tsx bench/flow-control.ts
 *
 * Prints the goal and MISSED when keys cost more than 20 % of the throughput.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { RuntimeBackend } from "cairn";
import { PostgresBackend } from "cairn/postgres";
import { SqliteBackend } from "cairn/sqlite";
import { printGrid, quantile } from "./report.ts";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "2000" },
    claimers: { type: "string", default: "4" },
    keys: { type: "string", default: "50" },
    rounds: { type: "string", default: "3" },
    "skip-sqlite": { type: "boolean", default: false },
    "skip-postgres": { type: "boolean", default: false },
  },
});
const RUNS = Number(values.runs);
const CLAIMERS = Number(values.claimers);
const KEYS = Number(values.keys);
const ROUNDS = Number(values.rounds);
const URL =
  process.env.CAIRN_BENCH_PG_URL ??
  process.env.CAIRN_TEST_DATABASE_URL ??
  "postgres://postgres@127.0.0.1:5432/postgres";
const AGENT = "bench_agent";
const VERSIONS = { workflow: "1", policy: null, runtime: "bench" };
const GOAL = 0.8;

type Mode = "off" | "keys";

/** Creates the runs, in parallel chunks (PostgreSQL batches concurrent creates into one statement). */
async function seed(backend: RuntimeBackend, mode: Mode): Promise<void> {
  const at = Date.now();
  for (let i = 0; i < RUNS; i += 200) {
    await Promise.all(
      Array.from({ length: Math.min(200, RUNS - i) }, (_, j) =>
        backend.createRun({
          id: `run-${mode}-${String(i + j).padStart(6, "0")}`,
          agent: AGENT,
          workflow: "work",
          key: null,
          input: { i: i + j },
          versions: VERSIONS,
          meta: {},
          actor: { kind: "user", id: "bench" },
          reason: "started",
          at: at + i + j,
          ...(mode === "keys" && { flow: { concurrencyKey: `key-${(i + j) % KEYS}`, concurrencyLimit: RUNS } }),
        }),
      ),
    );
  }
}

/** C claimers claim until nothing is left; runs claimed per second. */
async function drain(backend: RuntimeBackend, batch: boolean): Promise<number> {
  let claimed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLAIMERS }, async (_, c) => {
      const workerId = `w${c}`;
      for (;;) {
        const now = Date.now();
        if (batch && backend.claimRuns) {
          const got = await backend.claimRuns({
            workerId,
            now,
            leaseMs: 600_000,
            limit: 10,
            start: { actor: { kind: "worker", id: workerId }, reason: "claimed", versions: { [AGENT]: VERSIONS } },
          });
          if (got.length === 0) return;
          claimed += got.length;
        } else {
          const got = await backend.claimRun({ workerId, now, leaseMs: 600_000 });
          if (!got) return;
          claimed++;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  if (claimed !== RUNS) throw new Error(`claimed ${claimed} runs of ${RUNS}`);
  return claimed / seconds;
}

async function measure(name: string, open: (mode: Mode, round: number) => Promise<RuntimeBackend>, batch: boolean) {
  const figures: Record<Mode, number[]> = { off: [], keys: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order: Mode[] = round % 2 === 0 ? ["off", "keys"] : ["keys", "off"];
    for (const mode of order) {
      const backend = await open(mode, round);
      await backend.init();
      try {
        await seed(backend, mode);
        figures[mode].push(await drain(backend, batch));
      } finally {
        await backend.close();
      }
    }
  }
  const off = quantile(figures.off, 0.5);
  const keys = quantile(figures.keys, 0.5);
  const ratio = keys / off;
  return [
    name,
    off.toFixed(0),
    keys.toFixed(0),
    `${((ratio - 1) * 100).toFixed(1)} %`,
    ratio >= GOAL ? "met" : "MISSED",
  ];
}

console.log(
  `flow-control bench: ${RUNS} runs, ${CLAIMERS} claimers, ${KEYS} keys (limit never binding), ${ROUNDS} rounds; ${cpus().length} CPUs`,
);
console.log(`goal: claim throughput with concurrency keys at least ${GOAL * 100} % of without (at most 20 % less)`);
const lines: string[][] = [];
if (!values["skip-postgres"]) {
  const schemas: string[] = [];
  lines.push(
    await measure(
      "PostgreSQL claimRuns",
      async (mode, round) => {
        const schema = `cairn_bench_flow_${process.pid}_${mode}_${round}`;
        schemas.push(schema);
        return new PostgresBackend({ connectionString: URL, schema, max: CLAIMERS + 2 });
      },
      true,
    ),
  );
  const pg = (await import("pg")).default;
  const admin = new pg.Client({ connectionString: URL });
  await admin.connect();
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
}
if (!values["skip-sqlite"]) {
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-flow-"));
  try {
    lines.push(
      await measure(
        "SQLite claimRun",
        async (mode, round) => new SqliteBackend({ path: join(dir, `${mode}-${round}.db`) }),
        false,
      ),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
printGrid(["backend", "off (runs/s)", "keys (runs/s)", "change", "goal"], lines);
