import type { Cycle } from "./parked-runtime.ts";
import type { TimedSqlite } from "./timed-sqlite.ts";

/** The figures: quantiles, number formats, and the latency table of a signalled batch of runs. */

export const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
export const ms = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
export const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
export const n = (v: number) => Math.round(v).toLocaleString("en-US");

export function printLatency(title: string, cycles: Cycle[], backend: TimedSqlite, goal: boolean): void {
  const sorted = (pick: (c: Cycle) => number) => cycles.map(pick).sort((a, b) => a - b);
  const row = (label: string, values: number[]) =>
    console.log(
      `   ${label.padEnd(36)}${[0.5, 0.9, 0.99, 1].map((q) => ms(quantile(values, q)).padStart(8)).join("")}`,
    );
  const running = sorted((c) => c.running);
  console.log(title);
  console.log(
    `   ${"ms from calling runtime.signal".padEnd(36)}${["p50", "p90", "p99", "max"].map((h) => h.padStart(8)).join("")}`,
  );
  row(
    "RESUMING recorded (signal stored)",
    sorted((c) => c.resuming),
  );
  row("RUNNING recorded (claimed, started)", running);
  row(
    "runtime.signal returned",
    sorted((c) => c.returned),
  );
  row(
    "COMPLETED (replayed, finished)",
    sorted((c) => c.completed),
  );
  const sameTurn = cycles.filter((c) => c.sameTurn).length;
  console.log(
    `   RUNNING recorded in the event-loop turn of the signal (no poll, no timer) for ${n(sameTurn)} of ${n(cycles.length)}:` +
      " the in-process signal pokes the worker, which claims at once",
  );
  if (goal) {
    console.log(
      `   goal: p50 signal -> RUNNING under 5 ms on SQLite in one process: ${quantile(running, 0.5) < 5 ? "met" : "MISSED"}`,
    );
  }
  const total = cycles.reduce((a, c) => a + c.completed, 0);
  const inBackend = [...backend.spent.values()].reduce((a, e) => a + e.ms, 0);
  console.log(
    `   where a signal-to-COMPLETED cycle goes (mean per signal; backend calls are synchronous, timed in place):`,
  );
  for (const [name, e] of [...backend.spent.entries()].sort((a, b) => b[1].ms - a[1].ms)) {
    console.log(
      `     ${name.padEnd(22)} ${(e.n / cycles.length).toFixed(2).padStart(5)} calls ${ms((e.ms / cycles.length) * 1000).padStart(7)} µs`,
    );
  }
  console.log(
    `     ${"outside the backend".padEnd(22)} ${"".padStart(5)}       ${ms(((total - inBackend) / cycles.length) * 1000).padStart(7)} µs` +
      ` (Cairn, replay, event loop); ${ms((total / cycles.length) * 1000)} µs in all\n`,
  );
}
