import type { ChildWaitSweep } from "./contract/child-wait-sweep.ts";
import type { ForkStore } from "./contract/fork-store.ts";
import type { ImportStore } from "./contract/import-store.ts";
import type { JournalStore } from "./contract/journal-store.ts";
import type { LeaseStore } from "./contract/lease-store.ts";
import type { PruneStore } from "./contract/prune-store.ts";
import type { RateLimitStore } from "./contract/rate-limit-store.ts";
import type { RunStore } from "./contract/run-store.ts";
import type { ScheduleStore } from "./contract/schedule-store.ts";
import type { SignalStore } from "./contract/signal-store.ts";
import type { StopStore } from "./contract/stop-store.ts";
import type { TransitionFeed } from "./contract/transition-feed.ts";
import type { TransitionStore } from "./contract/transition-store.ts";
import type { WaitStore } from "./contract/wait-store.ts";
import type { WakeUps } from "./contract/wake-ups.ts";

export type { ChildWaitSweep } from "./contract/child-wait-sweep.ts";
export type { ForkRunRequest, ForkRunResult, ForkStore } from "./contract/fork-store.ts";
export type { ImportRunInput, ImportRunResult, ImportStore } from "./contract/import-store.ts";
export type { JournalStore } from "./contract/journal-store.ts";
export type {
  ClaimedRun,
  ClaimManyRequest,
  ClaimRequest,
  ClaimStart,
  LeaseStore,
  RenewRequest,
} from "./contract/lease-store.ts";
export type { PruneRunsRequest, PruneRunsResult, PruneStore } from "./contract/prune-store.ts";
export type { RateLimitStore } from "./contract/rate-limit-store.ts";
export type { CreateRunInput, CreateRunResult, RunCounts, RunFilter, RunStore } from "./contract/run-store.ts";
export type { ScheduleStore } from "./contract/schedule-store.ts";
export type { SignalRequest, SignalResult, SignalStore } from "./contract/signal-store.ts";
export type { StopRunRequest, StopStore } from "./contract/stop-store.ts";
export type {
  TransitionFeed,
  TransitionFeedEntry,
  TransitionFeedPage,
  TransitionFeedRequest,
} from "./contract/transition-feed.ts";
export type { Fence, RunPatch, TransitionRequest, TransitionStore } from "./contract/transition-store.ts";
export type {
  ResolveWaitRequest,
  ResolveWaitResult,
  SuspendRequest,
  SuspendResult,
  WaitStore,
} from "./contract/wait-store.ts";
export type { Wake, WakeUps } from "./contract/wake-ups.ts";

/**
 * The storage contract (DESIGN §7): the only way the engine touches storage. Every write is a
 * transaction; every write made on behalf of a worker that owns a run carries the lease epoch
 * it claimed with, and a write with a stale epoch throws `LeaseLostError` and stores nothing.
 *
 * It is made of roles, each an interface of its own in `contract/` with its requests and
 * results, each checked by its part of the conformance suite in `conformance/`, and each written
 * by the file of the same role in `sqlite/` and `postgres/` (`sqlite-runs.ts`, `postgres-runs.ts`,
 * …; `memory/memory-backend.ts` holds them all). The rules every backend applies are in `rules/`,
 * the SQL backends' rows in `rows/`.
 *
 * | role | interface | conformance |
 * | --- | --- | --- |
 * | runs | {@link RunStore} | `runs-conformance.ts`, `usage-conformance.ts` |
 * | leases | {@link LeaseStore} | `leases-conformance.ts` |
 * | transitions | {@link TransitionStore} | `transitions-conformance.ts`, `endings-conformance.ts` |
 * | journal | {@link JournalStore} | `journal-conformance.ts`, `effects-conformance.ts` |
 * | waits | {@link WaitStore} | `waits-conformance.ts`, `wait-resolution-conformance.ts` |
 * | signals | {@link SignalStore} | `signals-conformance.ts` |
 * | stops | {@link StopStore} | `stops-conformance.ts` |
 * | forks | {@link ForkStore} | `forks-conformance.ts` |
 * | imports | {@link ImportStore} | `imports-conformance.ts` |
 * | retention | {@link PruneStore} | `prune-conformance.ts` |
 * | the child-wait sweep | {@link ChildWaitSweep} | `child-wait-sweep-conformance.ts` |
 * | wake-ups (optional) | {@link WakeUps} | `wake-ups-conformance.ts` |
 * | the transition feed (optional) | {@link TransitionFeed} | `transition-feed-conformance.ts` |
 * | schedules (optional, `schedules`) | {@link ScheduleStore} | `schedules-conformance.ts` |
 * | rate limits (optional, `rateLimits`) | {@link RateLimitStore} | `rate-limits-conformance.ts` |
 *
 * A custom backend proves itself by passing the conformance suite exported from
 * `cairn/testing/conformance` (`runBackendConformance`).
 */
export interface RuntimeBackend
  extends RunStore,
    LeaseStore,
    TransitionStore,
    JournalStore,
    WaitStore,
    SignalStore,
    StopStore,
    ChildWaitSweep,
    ForkStore,
    WakeUps,
    ImportStore,
    PruneStore,
    TransitionFeed {
  /** Short name for messages and benchmarks ("memory", "sqlite", ...). */
  readonly name: string;
  /** Schedule records (DESIGN §4 *Schedules*); a backend without them cannot hold schedules. */
  readonly schedules?: ScheduleStore;
  /** Shared rate limits (DESIGN §4 *Rate limits*); a backend without them cannot share a limit. */
  readonly rateLimits?: RateLimitStore;
  /** Creates tables or structures; idempotent. Called by `Runtime.start()`. */
  init(): Promise<void>;
  /** Releases connections and files. */
  close(): Promise<void>;
}
