import { claimKeyed, claimRuns } from "./batching/postgres-claim-statements.ts";
import { moveRuns } from "./batching/postgres-move-statements.ts";
import { saveStepBatch, saveSteps } from "./batching/postgres-step-statements.ts";
import { type ForkStatements, forkStatements } from "./postgres-fork-statements.ts";
import { type JournalStatements, journalStatements } from "./postgres-journal-statements.ts";
import { type LeaseStatements, leaseStatements } from "./postgres-lease-statements.ts";
import { type PlanStatements, planStatements } from "./postgres-plan-statements.ts";
import { type RunStatements, runStatements } from "./postgres-run-statements.ts";
import type { Sql } from "./postgres-sql.ts";
import { quoteIdent } from "./postgres-sql.ts";
import { type TransitionStatements, transitionStatements } from "./postgres-transition-statements.ts";
import {
  type SignalStatements,
  type StopStatements,
  signalStatements,
  stopStatements,
  type WaitStatements,
  waitStatements,
} from "./postgres-wait-statements.ts";

/**
 * The SQL of `PostgresBackend`, for one schema. Each statement is a named prepared statement
 * (parsed once per connection); its name is a digest of its text, so backends on different
 * schemas can share a pool without their statements colliding.
 *
 * Reads name their columns rather than `SELECT *`: a prepared statement whose result type changes
 * under it (a later migration adding a column while workers run) fails with "cached plan must
 * not change result type", a named list does not change.
 *
 * Single statements are preferred to multi-statement transactions wherever the write allows it:
 * a statement is its own transaction and costs one round trip, where BEGIN … COMMIT costs four.
 */

/** The statements of one schema, by role. */
export type Statements = RunStatements &
  LeaseStatements &
  TransitionStatements &
  JournalStatements &
  WaitStatements &
  SignalStatements &
  StopStatements &
  PlanStatements &
  ForkStatements &
  BatchStatements;

/** The statements of the batches of `batching/`: a worker's claim, moves, step writes. */
export interface BatchStatements {
  /** {@link claimRuns}. */
  claimRuns: Sql;
  /** {@link claimKeyed}. */
  claimKeyed: Sql;
  /** {@link moveRuns}. */
  moveRuns: Sql;
  /**
   * The fenced upsert of the steps of several runs in one statement (group commit across runs):
   * $1/$2 the runs and the epochs their writers hold, $3 the commit level, $4 the steps as JSON
   * (`batchStepParams`), $5–$7 the blobs. Only the steps of runs whose epoch matches are written;
   * the run ids that come back are those refused.
   */
  saveStepBatch: Sql;
  /** {@link saveSteps}: the fenced journal insert of one run's steps. */
  saveSteps: Sql;
}

/** The statements of `schema` (unquoted). */
export function statements(schema: string): Statements {
  const s = quoteIdent(schema);
  return {
    ...runStatements(s),
    ...leaseStatements(s),
    ...transitionStatements(s),
    ...journalStatements(s),
    ...waitStatements(s),
    ...signalStatements(s),
    ...stopStatements(s),
    ...planStatements(s),
    ...forkStatements(s),
    claimRuns: claimRuns(s),
    claimKeyed: claimKeyed(s),
    moveRuns: moveRuns(s),
    saveStepBatch: saveStepBatch(s),
    saveSteps: saveSteps(s),
  };
}
