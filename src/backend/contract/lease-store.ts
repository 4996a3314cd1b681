import type { Actor, RunRecord, TransitionRecord, Versions } from "../../core/records.ts";

/**
 * The leases role of the storage contract: claiming runnable runs, renewing the leases a worker
 * holds, and finding the runs whose owner is gone. Checked by `conformance/leases-conformance.ts`.
 */
export interface LeaseStore {
  /**
   * Claims one runnable run (state PENDING, RESUMING, CANCELLING or RECONCILING, no lease or a lapsed one) for
   * `workerId`: sets the lease, increments the epoch and returns the claimed run, oldest run
   * first. With `runId`, only that run is considered. Two concurrent claims never get the same run.
   */
  claimRun(request: ClaimRequest): Promise<RunRecord | undefined>;
  /**
   * Optional: claims up to `limit` runnable runs at once, oldest first, under the same rules as
   * `claimRun` (without `runId`), in one transaction. Two concurrent claims never get the same run.
   * A worker uses it, when a backend has it, to fill its free slots in one round trip. With
   * `start`, each claimed run that is PENDING also goes RUNNING in that transaction, as
   * `transition` would record it (fenced by the epoch the claim gave); a run whose transition the
   * rules refuse comes back claimed, without one.
   */
  claimRuns?(request: ClaimManyRequest): Promise<ClaimedRun[]>;
  /**
   * Extends the leases a worker holds. Returns the ids whose lease was lost (epoch moved on or
   * owner changed); the worker must drop those runs.
   */
  renewLeases(request: RenewRequest): Promise<string[]>;
  /**
   * Runs held under a lease that has lapsed at `now` (`leaseExpiresAt <= now`, the same rule as
   * claiming), soonest-lapsed first: runs in an owned state (RUNNING, RESUMING, …) and PENDING runs
   * a worker claimed and has not started. With `Number.MAX_SAFE_INTEGER` it lists every leased run
   * (used to find owners that died).
   */
  listExpiredLeases(now: number, limit: number): Promise<RunRecord[]>;
  /** INTERRUPTED runs that automatic recovery may pick up (`recoveries < maxRecoveries`), least recently updated first. */
  listRecoverable(maxRecoveries: number, limit: number): Promise<RunRecord[]>;
}

/** What `claimRun` needs. */
export interface ClaimRequest {
  workerId: string;
  now: number;
  leaseMs: number;
  runId?: string;
  /**
   * Only runs of these agents: a worker claims only what it has the code for, so processes
   * hosting different agents can share one database. All agents when omitted.
   */
  agents?: readonly string[];
  /**
   * With `runId`: the run's lease is held by `leaseOwner`, whose process is known to be gone (a
   * worker of this host that no longer exists), under `epoch`. The run is claimed as if that
   * lease had lapsed, provided its epoch and owner are still those (so a live owner that renewed,
   * or another claim, wins). Used for a PENDING run claimed by a worker that died before starting it.
   */
  takeover?: { epoch: number; leaseOwner: string };
}

/** What `claimRuns` needs. */
export interface ClaimManyRequest extends Omit<ClaimRequest, "runId"> {
  /** Most runs claimed. */
  limit: number;
  /**
   * The PENDING -> RUNNING transition of a claimed PENDING run, recorded by the claim itself (at
   * the claim's `now`): what the worker would otherwise ask of `transition` next, with one round
   * trip and one commit fewer. A PENDING run whose agent `versions` does not name comes back
   * leased and not started, as may any run the backend cannot start in the claim; the worker then
   * records RUNNING itself.
   */
  start?: ClaimStart;
}

/** What `claimRuns` records for each PENDING run it starts: {@link ClaimManyRequest.start}. */
export interface ClaimStart {
  actor: Actor;
  reason: string;
  /** The versions a run of each agent starts under, keyed by agent name. */
  versions: Readonly<Record<string, Versions>>;
}

/** A run `claimRuns` claimed, and its RUNNING transition when the claim recorded one (`start`). */
export interface ClaimedRun {
  run: RunRecord;
  started?: TransitionRecord;
}

/** What `renewLeases` needs. */
export interface RenewRequest {
  workerId: string;
  now: number;
  leaseMs: number;
  runs: ReadonlyArray<{ runId: string; epoch: number }>;
}
