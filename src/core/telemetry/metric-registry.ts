/**
 * This process's own metrics, kept in memory so that `/metrics` can serve them in the Prometheus
 * text format without an OpenTelemetry SDK (the same figures also go to the API's Meter). Counters
 * and histograms only, with labels; the exposition is `prometheus-text.ts`.
 */

/** Label names to values. */
export type Labels = Readonly<Record<string, string>>;

/** One labelled series of a counter. */
export interface CounterSeries {
  labels: Labels;
  value: number;
}

/** One labelled series of a histogram: counts per upper bound (not cumulative), sum and count. */
export interface HistogramSeries {
  labels: Labels;
  counts: number[];
  sum: number;
  count: number;
}

/** A counter: a value per label set, only ever going up. */
export class Counter {
  readonly #series = new Map<string, CounterSeries>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  /** Adds `value` to the series of `labels`; `key` (the labels' values joined) spares working it out. */
  add(value: number, labels: Labels = {}, key = labelKey(labels)): void {
    const series = this.#series.get(key);
    if (series) series.value += value;
    else this.#series.set(key, { labels, value });
  }

  series(): CounterSeries[] {
    return [...this.#series.values()];
  }
}

/** A histogram over fixed upper bounds (`le`), per label set. */
export class Histogram {
  readonly #series = new Map<string, HistogramSeries>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: readonly number[],
  ) {}

  /** Records `value` in the series of `labels`; `key` (the labels' values joined) spares working it out. */
  record(value: number, labels: Labels = {}, key = labelKey(labels)): void {
    let series = this.#series.get(key);
    if (!series) {
      series = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.#series.set(key, series);
    }
    const index = this.buckets.findIndex((bound) => value <= bound);
    if (index >= 0) series.counts[index] = (series.counts[index] ?? 0) + 1;
    series.sum += value;
    series.count++;
  }

  series(): HistogramSeries[] {
    return [...this.#series.values()];
  }
}

/** The metrics of this process, in the order they were made. */
export class MetricRegistry {
  readonly #metrics: Array<Counter | Histogram> = [];

  counter(name: string, help: string): Counter {
    const counter = new Counter(name, help);
    this.#metrics.push(counter);
    return counter;
  }

  histogram(name: string, help: string, buckets: readonly number[]): Histogram {
    const histogram = new Histogram(name, help, buckets);
    this.#metrics.push(histogram);
    return histogram;
  }

  metrics(): ReadonlyArray<Counter | Histogram> {
    return this.#metrics;
  }
}

function labelKey(labels: Labels): string {
  const names = Object.keys(labels);
  if (names.length === 0) return "";
  return names
    .sort()
    .map((name) => `${name}\u0000${labels[name]}`)
    .join("\u0001");
}
