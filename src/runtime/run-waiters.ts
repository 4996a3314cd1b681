import type { RunRecord } from "../core/records.ts";
import { isSettled } from "../core/run-state.ts";

/**
 * The callers of `waitFor` waiting on runs: each waits up to a poll interval, and is woken early
 * with the run when this runtime records its settling transition, or without one when the
 * backend's wake-up says the run (or, after a reconnection, any run) may have moved.
 */
export class RunWaiters {
  readonly #waiters = new Map<string, Set<(terminal?: RunRecord) => void>>();

  /**
   * Waits up to `ms` for news of `runId`: the run when this runtime recorded its settling
   * transition, else undefined (read the run again).
   */
  next(runId: string, ms: number): Promise<RunRecord | undefined> {
    return new Promise<RunRecord | undefined>((resolve) => {
      const waiters = this.#waiters.get(runId) ?? new Set();
      this.#waiters.set(runId, waiters);
      const done = (terminal?: RunRecord) => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0 && this.#waiters.get(runId) === waiters) this.#waiters.delete(runId);
        resolve(terminal);
      };
      const timer = setTimeout(() => done(), ms);
      waiters.add(done);
    });
  }

  /** This runtime recorded a transition of `run`: its waiters get the run once it settled. */
  transition(run: RunRecord): void {
    const waiters = this.#waiters.get(run.id);
    // Each waiter judges by its own bound on recoveries whether this is the run's end.
    if (waiters && isSettled(run.state)) for (const w of [...waiters]) w(run);
  }

  /** A wake-up from the backend about `runId` (every run when undefined): its waiters read it again. */
  wake(runId: string | undefined): void {
    const waiting = runId === undefined ? [...this.#waiters.values()] : [this.#waiters.get(runId)];
    for (const waiters of waiting) for (const done of [...(waiters ?? [])]) done();
  }
}
