import type { WaitRecord } from "../../core/records.ts";

/**
 * The sweep of child waits, a role of the storage contract: the safety net under a child's end,
 * which resolves its parent's wait in its own transaction. Checked by
 * `conformance/child-wait-sweep-conformance.ts`.
 */
export interface ChildWaitSweep {
  /**
   * The sweep of child waits: resolves open waits of kind `child` whose child run has ended (a
   * terminal state other than INTERRUPTED) — waits that the child's end should have resolved in
   * its own transaction and did not — as that end would have (`planChildSweep` in
   * `rules/child-sweep-rules.ts`: outcome `child_ended`, the child's ending as the value, a note
   * that the sweep found it), and moves their PAUSED runs to RESUMING with a reason naming the
   * child. Each wait is resolved once, however many workers sweep at the same time; a run that has
   * ended is left as it is. At most `limit` runs; returns the waits it resolved (none, unless
   * something went wrong).
   */
  resolveEndedChildWaits(now: number, limit: number): Promise<WaitRecord[]>;
}
