import { parseArgs } from "node:util";

/**
 * The bench's command line, parsed in every process of it: the main one, and each child, which
 * gets its role and settings (`--role`, `--url`, `--schema`, …) from the one that forks it.
 */

export const { values } = parseArgs({
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
    "signal-gap": { type: "string", default: "200" },
    "skip-peers": { type: "boolean", default: false },
    system: { type: "string" },
  },
});

export const SERVER_URL = process.env.CAIRN_BENCH_PG_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
/** The pool size of each Cairn backend (its default is 10, as DBOS's and pg's). */
export const POOL = Number(values.pool);
