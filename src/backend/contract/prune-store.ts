import type { RunState } from "../../core/run-state.ts";

/**
 * The retention role of the storage contract (`Runtime.prune`, `cairn prune`; DESIGN §7,
 * "Retention"): ended runs deleted with everything they own, one bounded batch per call. Checked
 * by `conformance/prune-conformance.ts`.
 */
export interface PruneStore {
  /**
   * Deletes at most `limit` runs that ended (their last transition into one of `states`, all
   * terminal) before `endedBefore`, of `agent` when given, in one short transaction, with every
   * row they own: transitions (the feed's rows), steps and effects, waits and approvals, signals,
   * usage, and the out-of-line payloads no surviving step refers to. A run is taken only when its
   * parent, when there is one, and every child it started have ended too: an open run never loses
   * its parent or a child. A run another transaction holds is skipped, not waited for. With
   * `dryRun`, nothing is deleted and the runs that would be are returned, in id order after
   * `after`, so that a caller can page through them. Returns the ids, in id order.
   */
  pruneRuns(request: PruneRunsRequest): Promise<PruneRunsResult>;
}

/** What `pruneRuns` deletes. */
export interface PruneRunsRequest {
  /** Milliseconds since the epoch: runs whose last transition is earlier are taken. */
  endedBefore: number;
  /** The states of the runs to take; every one terminal (`InvalidInputError` otherwise). */
  states: readonly RunState[];
  /** Only runs of this agent. */
  agent?: string;
  /** At most this many runs (1 or more). */
  limit: number;
  /** List the runs that would be taken, delete nothing. */
  dryRun?: boolean;
  /** With `dryRun`: only runs whose id sorts after this one. */
  after?: string;
}

/** What `pruneRuns` did. */
export interface PruneRunsResult {
  /** The runs deleted (or, with `dryRun`, that would be), in id order. */
  runIds: string[];
}
