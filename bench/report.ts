/** Formatting shared by the benchmarks: percentiles and a table beside the physical limit. */

export interface Row {
  name: string;
  meanUs: number;
  p50: number;
  p95: number;
  p99: number;
}

/** The `q` quantile (0..1) of `values` (the nearest rank below). */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/** p50, p95 and p99 of `values`. */
export function percentiles(values: number[]): { p50: number; p95: number; p99: number } {
  return { p50: quantile(values, 0.5), p95: quantile(values, 0.95), p99: quantile(values, 0.99) };
}

/** Prints rows under a header, the first column left-aligned and the others right-aligned. */
export function printGrid(header: string[], lines: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? "").length)));
  const show = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
  console.log(show(header));
  for (const l of lines) console.log(show(l));
}

const fmt = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

/** Prints µs/step, steps/s, percentiles and the ratio to `limitUs` for every row, then `notes`. */
export function printTable(
  rows: Row[],
  limitUs: number,
  info: { steps: number; rounds: number; dir: string },
  notes: string[] = [],
): void {
  console.log(
    `\nstep overhead: ${info.steps} steps per run, ${info.rounds} rounds (median round), node ${process.version}`,
  );
  console.log(`database files in ${info.dir}\n`);
  const header = ["", "µs/step", "steps/s", "p50 µs", "p95 µs", "p99 µs", "× limit"];
  const lines = rows.map((r) => [
    r.name,
    fmt(r.meanUs),
    Math.round(1e6 / r.meanUs).toLocaleString("en-US"),
    fmt(r.p50),
    fmt(r.p95),
    fmt(r.p99),
    (r.meanUs / limitUs).toFixed(2),
  ]);
  printGrid(header, lines);
  console.log();
  for (const note of notes) console.log(note);
}
