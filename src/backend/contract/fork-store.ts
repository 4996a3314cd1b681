import type { ForkOrigin, RunRecord, StepRecord, TransitionRecord } from "../../core/records.ts";
import type { CreateRunInput } from "./run-store.ts";

/**
 * The forks role of the storage contract (`Runtime.fork`, `Runtime.rerun`; DESIGN §4, "Fork and
 * rerun"): a new run made from another's journal, its lineage recorded both ways. Checked by
 * `conformance/forks-conformance.ts`.
 */
export interface ForkStore {
  /**
   * In one transaction: creates `run` in PENDING with its first transition (as `createRun`; a
   * fork has no key), with `forkedFrom` set, its journal starting with `steps` (the source's,
   * already stamped with the new run's id), and appends the fork to the source's `forks`. Refuses
   * an unknown source (`RunNotFoundError`), a key, a step of another run and a taken id
   * (`InvalidInputError`), writing nothing. Wakes workers as a new run does.
   */
  forkRun(request: ForkRunRequest): Promise<ForkRunResult>;
}

/** What `forkRun` needs. */
export interface ForkRunRequest {
  run: CreateRunInput;
  forkedFrom: ForkOrigin;
  /** The journal the fork starts with (epoch 0). */
  steps: readonly StepRecord[];
}

/** What `forkRun` returns: the fork with its first transition, and the source with its `forks`. */
export interface ForkRunResult {
  run: RunRecord;
  transition: TransitionRecord;
  source: RunRecord;
}
