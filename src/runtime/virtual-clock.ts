import type { Clock } from "../core/clock.ts";

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that moves only when told to, for tests (`cairn/testing`). Durable timers — sleeps,
 * wait timeouts, approval expiries, long retry backoffs — fire when `advance` or `advanceTo`
 * reaches them, so a workflow that sleeps for 30 days runs in milliseconds. Short in-memory
 * retry backoffs (`sleep`) skip ahead on their own: nothing else can happen while they wait.
 */
export class VirtualClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: Timer[] = [];

  /** @param start epoch milliseconds @default 2026-01-01T00:00:00Z */
  constructor(start: number = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    // Time jumps ahead at once; the caller resumes on a later turn, as with a real timer.
    this.#now += Math.max(0, ms);
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      setImmediate(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      });
    });
  }

  schedule(at: number, fn: () => void): () => void {
    const timer: Timer = { at, seq: this.#seq++, fn };
    if (at <= this.#now) {
      setImmediate(fn);
      return () => {};
    }
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  /** The earliest scheduled time, if any. */
  get nextTimerAt(): number | undefined {
    return this.#timers.reduce<number | undefined>(
      (min, t) => (min === undefined || t.at < min ? t.at : min),
      undefined,
    );
  }

  /** Moves the clock forward by `ms`, firing every timer due on the way, in order. */
  advance(ms: number): Promise<void> {
    return this.advanceTo(this.#now + ms);
  }

  /** Moves the clock to `at` (never backwards), firing every timer due on the way, in order. */
  async advanceTo(at: number): Promise<void> {
    for (;;) {
      const due = this.#timers.filter((t) => t.at <= at).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#now = Math.max(this.#now, due.at);
      due.fn();
      // Let what the timer started take its turn before the next one fires.
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.#now = Math.max(this.#now, at);
  }
}
