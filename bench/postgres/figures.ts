/** The figures of the bench: quantiles, number formats and its tables. */

export const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
export const fmt = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
export const int = (v: number) => Math.round(v).toLocaleString("en-US");
export const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
export const median = (xs: number[]) =>
  quantile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );

export function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const show = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
  console.log(show(header));
  for (const r of rows) console.log(show(r));
}

export interface Series {
  name: string;
  us: number[];
  /** CPU time this process used, µs per step (or commit). */
  cpuUs: number;
  /** CPU time the server's backends for the system's database used, µs per step. */
  serverUs: number;
}

/** One row per system: the median round's mean, percentiles of all rounds, × the round's bare commit. */
export function printSteps(rounds: Series[][]): void {
  const names = rounds[0]?.map((s) => s.name) ?? [];
  printTable(
    ["", "µs/step", "steps/s", "p50 µs", "p90 µs", "p99 µs", "× commit", "CPU µs: node", "server", "round means µs"],
    names.map((name, i) => {
      const perRound = rounds.map((r) => r[i]?.us ?? []);
      const means = perRound.map(mean);
      const ratios = rounds.map((r, k) => (means[k] ?? Number.NaN) / mean(r[0]?.us ?? []));
      const m = median(means);
      const sorted = perRound.flat().sort((a, b) => a - b);
      return [
        name,
        fmt(m),
        int(1e6 / m),
        fmt(quantile(sorted, 0.5)),
        fmt(quantile(sorted, 0.9)),
        fmt(quantile(sorted, 0.99)),
        median(ratios).toFixed(2),
        fmt(median(rounds.map((r) => r[i]?.cpuUs ?? Number.NaN))),
        fmt(median(rounds.map((r) => r[i]?.serverUs ?? Number.NaN))),
        means.map(fmt).join(" "),
      ];
    }),
  );
}
