import type { RunRecord, SignalRecord, StepRecord, TransitionRecord, WaitRecord } from "../../core/records.ts";

/**
 * The imports role of the storage contract: a run recreated from its exported contract (DESIGN §5,
 * "Moving a run"), everything it had at once. Checked by `conformance/imports-conformance.ts`.
 */
export interface ImportStore {
  /**
   * Writes a whole run in one transaction: its row as given (state, epoch, recoveries, versions,
   * meta, usage, acceptance, times; no lease), its transitions with their ids, actors and times,
   * its steps (stamped with the run's epoch), its waits and its inbox of signals, then the
   * wake-up its state calls for. When a run with this id exists, nothing is written and that run
   * is returned (`created: false`): the caller decides whether it is the same import. A key that
   * names another run of the same agent and workflow is refused (`ImportConflictError`), as is a
   * record that is not whole (a gap in the transition ids, a last transition whose state is not
   * the run's, steps, waits or signals of another run).
   */
  importRun(input: ImportRunInput): Promise<ImportRunResult>;
}

/** Everything stored about one run, as `importRun` writes it. */
export interface ImportRunInput {
  run: RunRecord;
  /** In id order, 1 … `run.lastTransitionId`. */
  transitions: readonly TransitionRecord[];
  steps: readonly StepRecord[];
  waits: readonly WaitRecord[];
  signals: readonly SignalRecord[];
}

/** What `importRun` returns: the run written, or the run its id names already. */
export type ImportRunResult = { run: RunRecord; created: true } | { run: RunRecord; created: false };
