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
import { rmSync } from "node:fs";
import { cpus } from "node:os";
import { bareCommits } from "./paused-runs/bare-commits.ts";
import { n, printLatency } from "./paused-runs/figures.ts";
import { heapSection } from "./paused-runs/heap-section.ts";
import { CONCURRENCY, dir, SIGNALS, WARM_UP } from "./paused-runs/options.ts";
import { ParkedRuntime } from "./paused-runs/parked-runtime.ts";

// The bench in parts (bench/paused-runs/): options.ts (settings, the forced gc), heap.ts (the heap
// and the executions still reachable), parked-agent.ts, timed-sqlite.ts, parked-runtime.ts (a
// runtime that parks and signals runs), heap-section.ts, figures.ts and bare-commits.ts.

const cpu = cpus();
console.log(
  `machine: ${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores, node ${process.version}; files in ${dir}`,
);
console.log(bareCommits(1000));

// 1. Heap before and after parking RUNS runs, on the default durability.
const main = await ParkedRuntime.open(undefined, "paused.db");
console.log(
  `SQLite, durability "${main.backend.durability}" (the default); worker concurrency ${CONCURRENCY}, poll interval 500 ms (default)\n`,
);
await heapSection(main);

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
const quick = await ParkedRuntime.open("process", "paused-process.db");
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
