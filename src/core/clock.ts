/**
 * The time a workflow sees: `ctx.now()`, durable timers, wait timeouts, approval expiries and
 * retry backoffs. Leases always use the machine's clock. A test runtime passes a virtual clock
 * (`cairn/testing`) so that a workflow that sleeps for days runs in milliseconds.
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** Resolves after `ms` of this clock's time, or rejects with the signal's reason when it fires. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  /** Calls `fn` once this clock reaches `at` (at once if it has). Returns the cancel function. */
  schedule(at: number, fn: () => void): () => void;
}

/** Timers longer than this are split: Node's `setTimeout` overflows above 2^31-1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The machine's clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
    }),
  schedule: (at, fn) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      const left = at - Date.now();
      timer = left <= 0 ? setTimeout(fn, 0) : setTimeout(arm, Math.min(left, MAX_TIMER_MS));
      timer.unref?.();
    };
    arm();
    return () => clearTimeout(timer);
  },
};
