import { claimOrder, holdsSlot } from "../../core/flow-control.ts";
import type { RunRecord } from "../../core/records.ts";
import type { RunState } from "../../core/run-state.ts";
import type { ClaimRequest } from "../contract/lease-store.ts";
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

/**
 * Whether `run`'s concurrency key has a free slot at `now` among `runs` (every run of the
 * backend): fewer than its limit of the other runs with the key hold a slot (`holdsSlot`).
 */
export function hasFreeSlot(run: RunRecord, runs: Iterable<RunRecord>, now: number): boolean {
  if (run.concurrencyKey === undefined) return true;
  let held = 0;
  for (const other of runs) {
    if (other.id !== run.id && other.concurrencyKey === run.concurrencyKey && holdsSlot(other, now)) held++;
  }
  return held < (run.concurrencyLimit ?? 1);
}

/**
 * The run a claim of `request` takes among `runs` (every run of the backend), as every backend
 * picks it: the claimable runs ({@link isClaimable}) whose key has a free slot, in claim order
 * (effective priority, then age, then id: `claimOrder`).
 */
export function nextClaim(runs: readonly RunRecord[], request: ClaimRequest): RunRecord | undefined {
  if (request.runId !== undefined) {
    const run = runs.find((r) => r.id === request.runId);
    return run && isClaimable(run, request.now, request.agents, request.takeover) && hasFreeSlot(run, runs, request.now)
      ? run
      : undefined;
  }
  const candidates = runs
    .filter((r) => isClaimable(r, request.now, request.agents))
    .sort((a, b) => claimOrder(a) - claimOrder(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return candidates.find((run) => hasFreeSlot(run, runs, request.now));
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
