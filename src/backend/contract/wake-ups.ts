/**
 * Wake-ups, an optional role of the storage contract, so that workers and waiters need not wait
 * for their next poll. Checked by `conformance/wake-ups-conformance.ts`.
 */
export interface WakeUps {
  /**
   * Optional wake-ups, so that workers and waiters need not wait for their next poll: `listener`
   * hears of every run that became runnable (created, or moved to PENDING, RESUMING or
   * CANCELLING), every run a stop was asked of, and every run that reached a terminal state, in
   * any process using the same storage, once the write has committed. After a lost connection is re-established it hears `reconnected` (wake-ups
   * may have been missed: look again). Backends without it are polled. Returns the unsubscribe
   * function.
   */
  subscribe?(listener: (wake: Wake) => void): Promise<() => Promise<void>>;
}

/** What a wake-up says. */
export type Wake =
  | { kind: "runnable"; runId: string }
  | { kind: "ended"; runId: string }
  /** A stop (cancel, suspend) was asked of a run a worker may hold. */
  | { kind: "stop"; runId: string }
  /** The subscription was re-established; anything may have happened meanwhile. */
  | { kind: "reconnected" };
