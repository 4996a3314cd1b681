/**
 * Turns of the event loop for a process that runs steps back to back (the runtime's
 * `EnvelopeHost.breathe`): a run whose steps never wait on I/O (SQLite, in-memory tools) must
 * not hold up HTTP responses, timers and the other runs for its whole length.
 */

/** The clocks a breather reads: now, and how long the event loop has been idle (both in ms). */
export interface BreatherClock {
  now(): number;
  /**
   * The event loop's idle time so far: it grows only while the loop waits for I/O or a timer
   * with nothing else to do (`performance.eventLoopUtilization().idle`).
   */
  idle(): number;
}

const processClock: BreatherClock = {
  now: () => performance.now(),
  idle: () => performance.eventLoopUtilization().idle,
};

/**
 * Makes a `breathe`: undefined while the process has been busy for less than `busyMs`, else a
 * promise that resolves on the next turn of the event loop (setImmediate: after pending I/O,
 * without a timer's minimum delay). Busy time is counted from when the event loop was last idle,
 * or from the last turn this function gave, whichever is later: a worker whose runs wait on the
 * database between rounds of steps starts every round afresh. (Counted from the last turn given
 * alone, as it was, the wait before a round counted too, and a round that crossed the limit
 * halfway was cut in two — the runs after the cut missed the round's group commit and took one
 * of their own from then on.) Each run that waited for a turn starts a count of its own, so runs
 * that never wait take the limit each, in turn.
 */
export function breather(busyMs: number, clock: BreatherClock = processClock): () => Promise<void> | undefined {
  /** When the count began, and the loop's idle time then. */
  let busySince: number | undefined;
  let idleThen = 0;
  const begin = () => {
    busySince = clock.now();
    idleThen = clock.idle();
  };
  return () => {
    if (busySince === undefined || clock.idle() > idleThen) {
      begin();
      return undefined;
    }
    if (clock.now() - busySince < busyMs) return undefined;
    return new Promise((resolve) =>
      setImmediate(() => {
        begin();
        resolve();
      }),
    );
  };
}

/** How long this process runs steps back to back before letting the event loop turn. */
const BUSY_MS = 5;

/** The `breathe` of every run of this process (one count for all of them: they share the loop). */
export const breathe = breather(BUSY_MS);
