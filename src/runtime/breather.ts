/**
 * Turns of the event loop for a process that runs steps back to back (the runtime's
 * `EnvelopeHost.breathe`): a run whose steps never wait on I/O (SQLite, in-memory tools) must
 * not hold up HTTP responses, timers and the other runs for its whole length.
 */

/**
 * Makes a `breathe`: undefined while the steps of the current turn of the event loop have run
 * for less than `busyMs`, else a promise that resolves on the next turn (setImmediate: after
 * pending I/O, without a timer's minimum delay). Time is counted from the first call of a turn,
 * not from the last turn this function asked for: a worker whose runs wait on the database
 * between rounds of steps starts every round afresh. Counted from the last turn asked for, the
 * wait before a round counted too, and a round that crossed the limit halfway was cut in two —
 * the runs after the cut missed the round's group commit and took one of their own from then on.
 * `now` is a clock in ms (tests pass their own).
 */
export function breather(busyMs: number, now: () => number = () => performance.now()): () => Promise<void> | undefined {
  /** When the first step of this turn called, or undefined when none has yet. */
  let turnStart: number | undefined;
  return () => {
    const at = now();
    if (turnStart === undefined) {
      turnStart = at;
      // Runs when this turn is over (before any step that waits for the next one goes on).
      setImmediate(() => {
        turnStart = undefined;
      });
      return undefined;
    }
    if (at - turnStart < busyMs) return undefined;
    return new Promise((resolve) => setImmediate(resolve));
  };
}

/** How long this process runs steps back to back before letting the event loop turn. */
const BUSY_MS = 5;

/** The `breathe` of every run of this process (one count for all of them: they share the loop). */
export const breathe = breather(BUSY_MS);
