import type Database from "better-sqlite3";
import { InvalidInputError, LeaseLostError } from "../../core/errors.ts";
import type { RunRecord, StepRecord, TransitionRecord } from "../../core/records.ts";
import { OWNED_STATES } from "../../core/run-state.ts";
import type { ClaimRequest, CreateRunInput, RenewRequest, TransitionRequest } from "../backend.ts";
import { applyTransition, claimed, isClaimable, pendingRun } from "../transition-rules.ts";
import {
  encode,
  type RunRow,
  rowToRun,
  type StepRow,
  stepParams,
  type TransitionRow,
  transitionParams,
} from "./sqlite-schema.ts";

/**
 * The SQL of `SqliteBackend`: every statement is prepared once per connection, and every
 * multi-statement write is one better-sqlite3 transaction that the backend runs with
 * `.immediate` (BEGIN IMMEDIATE), so it holds the write lock from its first read.
 */

/** A better-sqlite3 connection. */
export type Db = Database.Database;
/** A prepared statement. */
export type Stmt<P extends unknown[] = unknown[], R = unknown> = Database.Statement<P, R>;

const OWNED_LIST = [...OWNED_STATES].map((s) => `'${s}'`).join(", ");

/** The prepared statements of one connection. */
export interface Statements {
  getRun: Stmt<[string], RunRow>;
  getRunByKey: Stmt<[string, string, string], RunRow>;
  runExists: Stmt<[string], { id: string }>;
  getEpoch: Stmt<[string], { epoch: number }>;
  insertRun: Stmt;
  insertTransition: Stmt;
  updateRun: Stmt;
  claimNext: Stmt<[number, string | null, string | null], RunRow>;
  setLease: Stmt;
  renewLease: Stmt<[number, string, number, string]>;
  listExpired: Stmt<[number, number], RunRow>;
  listRecoverable: Stmt<[number, number], RunRow>;
  listTransitions: Stmt<[string], TransitionRow>;
  saveStep: Stmt;
  loadSteps: Stmt<[string], StepRow>;
}

/** The multi-statement writes of one connection; the backend calls each with `.immediate`. */
export interface Transactions {
  createRun: Database.Transaction<(input: CreateRunInput) => { run: RunRecord; created: boolean }>;
  claim: Database.Transaction<(request: ClaimRequest) => RunRecord | undefined>;
  renew: Database.Transaction<(request: RenewRequest) => string[]>;
  transition: Database.Transaction<(request: TransitionRequest) => { run: RunRecord; transition: TransitionRecord }>;
  saveSteps: Database.Transaction<(steps: readonly StepRecord[], epoch: number) => void>;
}

/**
 * Upserts one step if the run is still at `epoch` (fence and write are one statement); a
 * refused write changed nothing, and the epoch read afterwards only words the error.
 */
export function saveStepFenced(s: Statements, step: StepRecord, epoch: number): void {
  if (s.saveStep.run(...stepParams(step, epoch)).changes === 1) return;
  const run = s.getEpoch.get(step.runId);
  if (!run) throw new LeaseLostError(`run ${step.runId} does not exist; step ${step.seq} not saved`);
  throw new LeaseLostError(
    `run ${step.runId}: step ${step.seq} under lease epoch ${epoch} refused, the run is at epoch ${run.epoch}; this worker lost the run`,
  );
}

/** Prepares the statements once per connection (in `init`) for reuse by every call. */
export function prepareStatements(db: Db): Statements {
  return {
    getRun: db.prepare<[string], RunRow>("SELECT * FROM runs WHERE id = ?"),
    getRunByKey: db.prepare<[string, string, string], RunRow>(
      "SELECT * FROM runs WHERE agent = ? AND workflow = ? AND run_key = ?",
    ),
    runExists: db.prepare<[string], { id: string }>("SELECT id FROM runs WHERE id = ?"),
    getEpoch: db.prepare<[string], { epoch: number }>("SELECT epoch FROM runs WHERE id = ?"),
    insertRun: db.prepare(
      `INSERT INTO runs (id, agent, workflow, run_key, state, paused_reason, input, output, error, epoch,
         lease_owner, lease_expires_at, recoveries, last_transition_id, versions, meta, created_at, updated_at)
       VALUES (?, ?, ?, ?, 'PENDING', NULL, ?, NULL, NULL, 0, NULL, NULL, 0, 1, ?, ?, ?, ?)`,
    ),
    insertTransition: db.prepare(
      `INSERT INTO transitions (run_id, id, at, actor_kind, actor_id, from_state, to_state, paused_reason, reason, versions)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    // Only the JSON columns a patch names are rewritten, so a transition stringifies nothing else.
    updateRun: db.prepare(
      `UPDATE runs SET state = ?, paused_reason = ?,
         output = CASE WHEN ? THEN ? ELSE output END,
         error = CASE WHEN ? THEN ? ELSE error END,
         epoch = ?, lease_owner = ?, lease_expires_at = ?, recoveries = ?, last_transition_id = ?, updated_at = ?
       WHERE id = ?`,
    ),
    // Must select exactly what `isClaimable` accepts; the rule is still checked on the row found.
    claimNext: db.prepare<[number, string | null, string | null], RunRow>(
      `SELECT * FROM runs WHERE state IN ('PENDING', 'RESUMING')
         AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= ?)
         AND (? IS NULL OR agent IN (SELECT value FROM json_each(?)))
       ORDER BY created_at, id LIMIT 1`,
    ),
    setLease: db.prepare(
      "UPDATE runs SET epoch = ?, lease_owner = ?, lease_expires_at = ?, updated_at = ? WHERE id = ?",
    ),
    renewLease: db.prepare<[number, string, number, string]>(
      "UPDATE runs SET lease_expires_at = ? WHERE id = ? AND epoch = ? AND lease_owner = ?",
    ),
    listExpired: db.prepare<[number, number], RunRow>(
      `SELECT * FROM runs WHERE state IN (${OWNED_LIST}) AND lease_expires_at IS NOT NULL AND lease_expires_at <= ?
       ORDER BY lease_expires_at, id LIMIT ?`,
    ),
    listRecoverable: db.prepare<[number, number], RunRow>(
      "SELECT * FROM runs WHERE state = 'INTERRUPTED' AND recoveries < ? ORDER BY updated_at, id LIMIT ?",
    ),
    listTransitions: db.prepare<[string], TransitionRow>("SELECT * FROM transitions WHERE run_id = ? ORDER BY id"),
    // The fence and the write are one statement, hence one transaction: the row is written only
    // while the run is at the writer's epoch, and the write lock is taken before the check.
    saveStep: db.prepare(
      `INSERT INTO steps (run_id, seq, kind, name, status, args_digest, args, result, error, attempts, heartbeat,
         usage, started_at, ended_at, epoch)
       SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM runs WHERE id = ? AND epoch = ?)
       ON CONFLICT (run_id, seq) DO UPDATE SET kind = excluded.kind, name = excluded.name, status = excluded.status,
         args_digest = excluded.args_digest, args = excluded.args, result = excluded.result, error = excluded.error,
         attempts = excluded.attempts, heartbeat = excluded.heartbeat, usage = excluded.usage,
         started_at = excluded.started_at, ended_at = excluded.ended_at, epoch = excluded.epoch`,
    ),
    loadSteps: db.prepare<[string], StepRow>("SELECT * FROM steps WHERE run_id = ? ORDER BY seq"),
  };
}

/** The multi-statement writes; each is called with `.immediate` so it takes the write lock first. */
export function prepareTransactions(db: Db, s: Statements, file: string): Transactions {
  return {
    createRun: db.transaction((input: CreateRunInput): { run: RunRecord; created: boolean } => {
      if (input.key !== null) {
        const row = s.getRunByKey.get(input.agent, input.workflow, input.key);
        if (row) return { run: rowToRun(row), created: false };
      }
      if (s.runExists.get(input.id)) {
        throw new InvalidInputError(`run id "${input.id}" already exists in "${file}"; run ids must be unique`);
      }
      s.insertRun.run(
        input.id,
        input.agent,
        input.workflow,
        input.key,
        JSON.stringify(input.input),
        JSON.stringify(input.versions),
        JSON.stringify(input.meta),
        input.at,
        input.at,
      );
      const { run, transition: first } = pendingRun(input);
      s.insertTransition.run(...transitionParams(first));
      return { run, created: true };
    }),
    claim: db.transaction((request: ClaimRequest): RunRecord | undefined => {
      const agents = request.agents === undefined ? null : JSON.stringify(request.agents);
      const row =
        request.runId === undefined ? s.claimNext.get(request.now, agents, agents) : s.getRun.get(request.runId);
      if (!row) return undefined;
      const run = rowToRun(row);
      if (!isClaimable(run, request.now, request.agents)) return undefined;
      const next = claimed(run, request.workerId, request.now, request.leaseMs);
      s.setLease.run(next.epoch, next.leaseOwner, next.leaseExpiresAt, next.updatedAt, next.id);
      return next;
    }),
    renew: db.transaction((request: RenewRequest): string[] => {
      const lost: string[] = [];
      const expiresAt = request.now + request.leaseMs;
      for (const { runId, epoch } of request.runs) {
        if (s.renewLease.run(expiresAt, runId, epoch, request.workerId).changes === 0) lost.push(runId);
      }
      return lost;
    }),
    transition: db.transaction((request: TransitionRequest) => {
      const row = s.getRun.get(request.runId);
      const result = applyTransition(row && rowToRun(row), request);
      const { run } = result;
      const patch = request.patch ?? {};
      const setOutput = patch.output !== undefined;
      const setError = patch.error !== undefined;
      s.updateRun.run(
        run.state,
        run.pausedReason,
        setOutput ? 1 : 0,
        setOutput ? encode(patch.output) : null,
        setError ? 1 : 0,
        setError ? encode(patch.error ?? undefined) : null,
        run.epoch,
        run.leaseOwner,
        run.leaseExpiresAt,
        run.recoveries,
        run.lastTransitionId,
        run.updatedAt,
        run.id,
      );
      s.insertTransition.run(...transitionParams(result.transition));
      return result;
    }),
    saveSteps: db.transaction((steps: readonly StepRecord[], epoch: number) => {
      for (const step of steps) saveStepFenced(s, step, epoch);
    }),
  };
}
