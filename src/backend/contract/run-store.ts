import type { RunFlow } from "../../core/flow-control.ts";
import type {
  AcceptanceRecord,
  Actor,
  Json,
  ParentClosePolicy,
  RunRecord,
  TransitionRecord,
  Versions,
} from "../../core/records.ts";
import type { PausedReason, RunState } from "../../core/run-state.ts";

/**
 * The runs role of the storage contract: creating, reading and listing runs, and an operator's
 * verdict on a completed one. Checked by `conformance/runs-conformance.ts` (and the acceptance
 * half of `usage-conformance.ts`).
 */
export interface RunStore {
  /**
   * Creates a run in PENDING with its first transition (id 1, from null), or, when `key` is
   * set and a run with the same (agent, workflow, key) exists, returns that run untouched. A
   * created run comes with the transition written, so that the caller can report it without
   * reading it back.
   */
  createRun(input: CreateRunInput): Promise<CreateRunResult>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** Newest first. */
  listRuns(filter?: RunFilter): Promise<RunRecord[]>;
  /**
   * Stores an operator's verdict on a COMPLETED run (`accept` / `reject`), apart from its state:
   * in one transaction, refuses a run that is not COMPLETED (`RunNotCompletedError`) or already
   * has a verdict (`AlreadyDecidedError`), else sets `acceptance` and returns the run.
   */
  recordAcceptance(runId: string, acceptance: AcceptanceRecord): Promise<RunRecord>;
  /**
   * How many runs are in each (state, paused reason), and the backlog: runs that a worker could
   * claim at `now` and that none holds (a runnable state, no live lease). For `/metrics`: one
   * grouped count, no rows read. Optional for a custom backend (its metrics then leave these out).
   */
  countRuns?(now: number): Promise<RunCounts>;
}

/** What `countRuns` returns. */
export interface RunCounts {
  /** One entry per (state, paused reason) that has runs. */
  states: Array<{ state: RunState; pausedReason: PausedReason | null; count: number }>;
  /** Runs in a runnable state with no live lease. */
  backlog: number;
}

/** What `createRun` returns: the run created with its first transition, or the run its key names. */
export type CreateRunResult =
  | { run: RunRecord; created: true; transition: TransitionRecord }
  | { run: RunRecord; created: false };

/** What `createRun` needs. */
export interface CreateRunInput {
  id: string;
  agent: string;
  workflow: string;
  key: string | null;
  input: Json;
  versions: Versions;
  meta: Record<string, Json>;
  actor: Actor;
  reason: string;
  at: number;
  /** The spawning run, for a child run. */
  parentRunId?: string | null;
  /** @default "suspend" for a child run, null otherwise */
  parentClosePolicy?: ParentClosePolicy | null;
  /** Flow control (`core/flow-control.ts`): the run's concurrency key, its limit and priority. */
  flow?: RunFlow;
}

/** Filter of `listRuns`. */
export interface RunFilter {
  agent?: string;
  workflow?: string;
  state?: RunState | readonly RunState[];
  /** Only children of this run. */
  parentRunId?: string;
  /** @default 100 */
  limit?: number;
  /** @default 0 */
  offset?: number;
}
