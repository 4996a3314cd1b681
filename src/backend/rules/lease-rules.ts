import type { RunRecord } from "../../core/records.ts";
import type { RunState } from "../../core/run-state.ts";
import type { RunCounts } from "../contract/run-store.ts";

/** The rules of a claim, shared by every backend. */

/**
 * States a worker claims: a new run, a run to resume, a run whose cancellation a worker must
 * finish (CANCELLING without a live lease: cancelled while PAUSED, or its worker was lost), and a
 * run an operator reconciled (RECONCILING: the worker moves it on to RUNNING and replays it).
 */
export const RUNNABLE_STATES: ReadonlySet<RunState> = new Set<RunState>([
  "PENDING",
  "RESUMING",
  "CANCELLING",
  "RECONCILING",
]);

/**
 * Whether `run` may be claimed at `now` (runnable state, no live lease, one of `agents` when
 * given). A lease named by `takeover` (its owner known to be gone, `ClaimRequest.takeover`) counts
 * as lapsed while the run's epoch and owner are still the ones it names.
 */
export function isClaimable(
  run: RunRecord,
  now: number,
  agents?: readonly string[],
  takeover?: { epoch: number; leaseOwner: string },
): boolean {
  const lostOwner = takeover !== undefined && run.epoch === takeover.epoch && run.leaseOwner === takeover.leaseOwner;
  return (
    RUNNABLE_STATES.has(run.state) &&
    (agents === undefined || agents.includes(run.agent)) &&
    (run.leaseOwner === null || run.leaseExpiresAt === null || run.leaseExpiresAt <= now || lostOwner)
  );
}

/** The run after a claim by `workerId`. */
export function claimed(run: RunRecord, workerId: string, now: number, leaseMs: number): RunRecord {
  return { ...run, epoch: run.epoch + 1, leaseOwner: workerId, leaseExpiresAt: now + leaseMs, updatedAt: now };
}

/** `countRuns` over run records: runs per (state, paused reason), and the backlog (claimable now). */
export function countRunRecords(runs: Iterable<RunRecord>, now: number): RunCounts {
  const byKey = new Map<string, RunCounts["states"][number]>();
  let backlog = 0;
  for (const run of runs) {
    const key = `${run.state}\u0000${run.pausedReason ?? ""}`;
    const entry = byKey.get(key);
    if (entry) entry.count++;
    else byKey.set(key, { state: run.state, pausedReason: run.pausedReason, count: 1 });
    if (isClaimable(run, now)) backlog++;
  }
  return { states: [...byKey.values()], backlog };
}
