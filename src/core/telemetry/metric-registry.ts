/**
 * This process's own metrics, kept in memory so that `/metrics` can serve them in the Prometheus
 * text format without an OpenTelemetry SDK (the same figures also go to the API's Meter). Counters
 * and histograms only, with labels; the exposition is `prometheus-text.ts`.
 */

/** Label names to values. */
export type Labels = Readonly<Record<string, string>>;

/**
 * The labels of a series, or how to make them from its key: called only when the series is new,
 * so that a hot call site (a step's figures) builds no labels object for a series that exists.
 */
export type LabelsOf = Labels | ((key: string) => Labels);

const labelsOf = (labels: LabelsOf, key: string): Labels => (typeof labels === "function" ? labels(key) : labels);

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
  add(value: number, labels: LabelsOf = {}, key = labelKey(labels)): void {
    const series = this.#series.get(key);
    if (series) series.value += value;
    else this.#series.set(key, { labels: labelsOf(labels, key), value });
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
  record(value: number, labels: LabelsOf = {}, key = labelKey(labels)): void {
    let series = this.#series.get(key);
    if (!series) {
      series = { labels: labelsOf(labels, key), counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.#series.set(key, series);
    }
    // A loop, not findIndex: no closure made for every value recorded.
    const { buckets } = this;
    const { counts } = series;
    for (let i = 0; i < buckets.length; i++) {
      if (value <= (buckets[i] as number)) {
        counts[i] = (counts[i] ?? 0) + 1;
        break;
      }
    }
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

function labelKey(labels: LabelsOf): string {
  if (typeof labels === "function") throw new TypeError("labels made from a key need the key");
  const names = Object.keys(labels);
  if (names.length === 0) return "";
  return names
    .sort()
    .map((name) => `${name}\u0000${labels[name]}`)
    .join("\u0001");
}
