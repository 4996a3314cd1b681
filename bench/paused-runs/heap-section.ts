import { statSync } from "node:fs";
import Database from "better-sqlite3";
import { mb, ms, n } from "./figures.ts";
import { heapAfterGc, live } from "./heap.ts";
import { RUNS, WARM_UP } from "./options.ts";
import type { ParkedRuntime } from "./parked-runtime.ts";

/**
 * 1. Heap before and after parking RUNS runs (after a warm-up): what the database says of them,
 * what is still reachable of their executions, and the heap's growth.
 */
export async function heapSection(main: ParkedRuntime): Promise<void> {
  const figures = await measureHeap(main);
  printHeap(main, figures);
}

type HeapFigures = Awaited<ReturnType<typeof measureHeap>>;

async function measureHeap(main: ParkedRuntime) {
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
  return {
    heapIdle,
    heapBefore,
    heapAfter,
    parkMs,
    states,
    leased,
    openWaits,
    listed,
    contextsLeft,
    inputsLeft,
    pausedInDb,
    growth,
  };
}

function printHeap(main: ParkedRuntime, figures: HeapFigures): void {
  const {
    heapIdle,
    heapBefore,
    heapAfter,
    parkMs,
    states,
    leased,
    openWaits,
    listed,
    contextsLeft,
    inputsLeft,
    pausedInDb,
    growth,
  } = figures;
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
    `   goal: under 200 bytes of heap per paused run (${n(RUNS)} runs: ${((RUNS * 200) / 1024 / 1024).toFixed(1)} MB; a paused run holds no memory): ${growth < RUNS * 200 ? "met" : "MISSED"}`,
  );
  console.log(
    `   (rss ${mb(process.memoryUsage().rss)} MB, with SQLite's page cache; database ${mb(statSync(main.path).size)} MB + WAL)`,
  );
  if (pausedInDb !== RUNS || listed !== RUNS || contextsLeft !== 0 || inputsLeft !== 0 || leased !== 0) {
    console.log("   NOTE: not every run is paused and released; the heap figure above is not of paused runs only");
  }
  console.log();
}
