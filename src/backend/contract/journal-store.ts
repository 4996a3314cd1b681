import type { StepRecord } from "../../core/records.ts";

/**
 * The journal role of the storage contract: a run's steps, written under the lease's fence and
 * read back for replay. Checked by `conformance/journal-conformance.ts` (and, for the effect
 * records steps carry, `conformance/effects-conformance.ts`).
 */
export interface JournalStore {
  /**
   * Inserts or replaces the steps (runId, seq) — all of one run — in one transaction, fenced by
   * `epoch`: a stale epoch stores none of them. `sync: false` lets the commit be cheaper (SQLite
   * synchronous=NORMAL): used when no completed result is among them.
   */
  saveSteps(steps: readonly StepRecord[], options: { epoch: number; sync: boolean }): Promise<void>;
  /** All steps of a run in seq order. */
  loadSteps(runId: string): Promise<StepRecord[]>;
}
