import type Database from "better-sqlite3";
import { InvalidInputError, LeaseLostError } from "../../core/errors.ts";
import type { AcceptanceRecord, RunRecord, StepRecord, TransitionRecord, WaitRecord } from "../../core/records.ts";
import type {
  ClaimRequest,
  CreateRunInput,
  CreateRunResult,
  RenewRequest,
  ResolveWaitRequest,
  ResolveWaitResult,
  SignalRequest,
  SignalResult,
  StopRunRequest,
  SuspendRequest,
  SuspendResult,
  TransitionRequest,
} from "../backend.ts";
import { rowToRun, runValues } from "../rows/run-rows.ts";
import { rowToSignal, signalValues } from "../rows/signal-rows.ts";
import { type EncodedStep, encodeStep } from "../rows/step-rows.ts";
import { transitionParams } from "../rows/transition-rows.ts";
import { rowToWait, waitValues } from "../rows/wait-rows.ts";
import { planChildSweep } from "../rules/child-sweep-rules.ts";
import { type EndContext, planTransition } from "../rules/ending-rules.ts";
import { claimed, isClaimable } from "../rules/lease-rules.ts";
import { hasEnded, type Plan } from "../rules/plan.ts";
import { applyAcceptance, pendingRun } from "../rules/run-rules.ts";
import { planSignal, signalTarget } from "../rules/signal-rules.ts";
import { planStop } from "../rules/stop-rules.ts";
import { planDue, planResolveWait, planSuspend } from "../rules/wait-rules.ts";
import { type Db, type Statements, saveStepFenced } from "./sqlite-statements.ts";

/**
 * The multi-statement writes of `SqliteBackend`. Each is a better-sqlite3 transaction that the
 * backend runs with `.immediate` (BEGIN IMMEDIATE), so it holds the write lock from its first
 * read. The writes of waits, signals, stops and run endings load the rows a planner of
 * `../rules/` names, call it, and write the {@link Plan} it returns with {@link applyPlan},
 * exactly as `InMemoryBackend` does.
 */

type Tx<F extends (...args: never[]) => unknown> = Database.Transaction<F>;

/** The multi-statement writes of one connection; the backend calls each with `.immediate`. */
export interface Transactions {
  createRun: Tx<(input: CreateRunInput) => CreateRunResult>;
  claim: Tx<(request: ClaimRequest) => RunRecord | undefined>;
  renew: Tx<(request: RenewRequest) => string[]>;
  transition: Tx<(request: TransitionRequest) => { run: RunRecord; transition: TransitionRecord }>;
  /** Steps with their encoded columns and blobs (`encodeStep`). */
  saveSteps: Tx<(steps: readonly { step: StepRecord; encoded: EncodedStep }[], epoch: number) => void>;
  suspend: Tx<(request: SuspendRequest) => SuspendResult>;
  resolveWait: Tx<(request: ResolveWaitRequest) => ResolveWaitResult>;
  deliverSignal: Tx<(request: SignalRequest) => SignalResult>;
  fireDueWaits: Tx<(now: number, limit: number) => WaitRecord[]>;
  /** The sweep of child waits, for the runs given (found by `endedChildWaitRuns` before the write). */
  sweepChildWaits: Tx<(runIds: readonly string[], now: number) => WaitRecord[]>;
  requestStop: Tx<(request: StopRunRequest) => { run: RunRecord; transitions: TransitionRecord[] }>;
  recordAcceptance: Tx<(runId: string, acceptance: AcceptanceRecord) => RunRecord>;
}

/**
 * Writes a plan inside the caller's transaction, in an order the constraints accept: changed
 * runs (a run that was continued leaves the key index before its successor enters it), new runs,
 * transitions, waits, then signals (a signal stored already keeps its arrival order).
 */
export function applyPlan(s: Statements, plan: Plan, file: string): void {
  for (const run of plan.runs.values()) s.updateRun.run(...runValues(run).slice(1), run.id);
  for (const run of plan.created) insertNewRun(s, run, file);
  for (const t of plan.transitions) s.insertTransition.run(...transitionParams(t));
  for (const w of plan.waits) s.upsertWait.run(...waitValues(w));
  for (const signal of plan.signals) s.upsertSignal.run(...signalValues(signal));
}

function insertNewRun(s: Statements, run: RunRecord, file: string): void {
  if (s.runExists.get(run.id)) {
    throw new InvalidInputError(`run id "${run.id}" already exists in "${file}"; run ids must be unique`);
  }
  s.insertRun.run(...runValues(run));
}

function getRun(s: Statements, runId: string): RunRecord | undefined {
  const row = s.getRun.get(runId);
  return row && rowToRun(row);
}

/** What `planEnd` needs of a run that ends with this transition (see `planTransition`). */
function endContext(s: Statements, run: RunRecord): EndContext {
  const parent = run.parentRunId === null ? undefined : getRun(s, run.parentRunId);
  const parentWait = parent && s.openChildWait.get(parent.id, run.id);
  return {
    openWaits: s.openWaits.all(run.id).map(rowToWait),
    parent,
    parentWait: parentWait && rowToWait(parentWait),
    children: s.openChildren.all(run.id).map(rowToRun),
  };
}

/**
 * Prepares the multi-statement writes once per connection; each is called with `.immediate`.
 * `inlineLimitBytes` is the backend's (steps written with a transition go out of line like any).
 */
export function prepareTransactions(db: Db, s: Statements, file: string, inlineLimitBytes: number): Transactions {
  return {
    createRun: db.transaction((input: CreateRunInput): CreateRunResult => {
      if (input.key !== null) {
        const row = s.getRunByKey.get(input.agent, input.workflow, input.key);
        if (row) return { run: rowToRun(row), created: false };
      }
      const { run, transition: first } = pendingRun(input);
      insertNewRun(s, run, file);
      s.insertTransition.run(...transitionParams(first));
      return { run, created: true, transition: first };
    }),
    claim: db.transaction((request: ClaimRequest): RunRecord | undefined => {
      const agents = request.agents === undefined ? null : JSON.stringify(request.agents);
      const row =
        request.runId === undefined ? s.claimNext.get(request.now, agents, agents) : s.getRun.get(request.runId);
      if (!row) return undefined;
      const run = rowToRun(row);
      if (!isClaimable(run, request.now, request.agents, request.runId === undefined ? undefined : request.takeover)) {
        return undefined;
      }
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
      const run = getRun(s, request.runId);
      const end = run && hasEnded(request.to) ? endContext(s, run) : undefined;
      const { plan, ...result } = planTransition(end ? { run, request, end } : { run, request });
      applyPlan(s, plan, file);
      // Under the transition's fence (checked by the planner), with the epoch it leaves the run at.
      for (const step of request.steps ?? []) {
        if (step.runId !== request.runId) throw new InvalidInputError("a transition's steps must be steps of its run");
        saveStepFenced(s, step, encodeStep(step, inlineLimitBytes), result.run.epoch);
      }
      return result;
    }),
    saveSteps: db.transaction((steps: readonly { step: StepRecord; encoded: EncodedStep }[], epoch: number) => {
      for (const { step, encoded } of steps) saveStepFenced(s, step, encoded, epoch);
    }),
    suspend: db.transaction((request: SuspendRequest): SuspendResult => {
      const run = getRun(s, request.runId);
      if (!run) throw new LeaseLostError(`run ${request.runId} does not exist`);
      const stored = s.listWaits.all(run.id).map(rowToWait);
      // Only the children that blocked child waits name: those are the ones planSuspend looks at.
      const blocked = new Set(request.blockedOn);
      const childIds = new Set(
        [...stored, ...request.waits].filter((w) => w.kind === "child" && blocked.has(w.id)).map((w) => w.name),
      );
      const { plan, result } = planSuspend({
        run,
        request,
        stored,
        inbox: s.unconsumedSignals.all(run.id).map(rowToSignal),
        children: [...childIds].map((id) => getRun(s, id)).filter((r): r is RunRecord => r !== undefined),
      });
      applyPlan(s, plan, file);
      return result as SuspendResult;
    }),
    resolveWait: db.transaction((request: ResolveWaitRequest): ResolveWaitResult => {
      const wait = s.getWait.get(request.runId, request.waitId);
      const { plan, ...result } = planResolveWait({
        run: getRun(s, request.runId),
        wait: wait && rowToWait(wait),
        request,
      });
      applyPlan(s, plan, file);
      return result;
    }),
    deliverSignal: db.transaction((request: SignalRequest): SignalResult => {
      const run = getRun(s, request.runId);
      const existing = s.getSignal.get(request.runId, request.messageId);
      const openWaits = run ? s.openSignalWaits.all(run.id, request.name).map(rowToWait) : [];
      const counted = run && !existing && request.maxUnread !== undefined && !signalTarget(openWaits, request);
      const { plan, ...result } = planSignal({
        run,
        request,
        existing: existing && rowToSignal(existing),
        openWaits,
        unread: counted ? (s.countUnreadSignals.get(run.id) ?? 0) : undefined,
      });
      applyPlan(s, plan, file);
      return result;
    }),
    fireDueWaits: db.transaction((now: number, limit: number): WaitRecord[] => {
      const byRun = new Map<string, WaitRecord[]>();
      for (const row of s.dueWaits.all(now, limit)) {
        const wait = rowToWait(row);
        byRun.set(wait.runId, [...(byRun.get(wait.runId) ?? []), wait]);
      }
      const resolved: WaitRecord[] = [];
      for (const [runId, due] of byRun) {
        // A wait's run exists (foreign key).
        const run = getRun(s, runId) as RunRecord;
        const result = planDue({ run, due, now, versions: run.versions });
        applyPlan(s, result.plan, file);
        resolved.push(...result.resolved);
      }
      return resolved;
    }),
    sweepChildWaits: db.transaction((runIds: readonly string[], now: number): WaitRecord[] => {
      const resolved: WaitRecord[] = [];
      for (const runId of runIds) {
        // Read again under the write lock: the candidates were read before it.
        const run = getRun(s, runId);
        if (!run) continue;
        const waits = s.openChildWaits.all(run.id).map(rowToWait);
        const children = waits.map((w) => getRun(s, w.name)).filter((c): c is RunRecord => c !== undefined);
        const result = planChildSweep({ run, waits, children, at: now });
        applyPlan(s, result.plan, file);
        resolved.push(...result.resolved);
      }
      return resolved;
    }),
    requestStop: db.transaction((request: StopRunRequest) => {
      const run = getRun(s, request.runId);
      const plan = planStop({ run, request });
      applyPlan(s, plan, file);
      return { run: plan.current(run as RunRecord), transitions: plan.transitions };
    }),
    recordAcceptance: db.transaction((runId: string, acceptance: AcceptanceRecord): RunRecord => {
      const run = applyAcceptance(getRun(s, runId), runId, acceptance);
      s.updateRun.run(...runValues(run).slice(1), run.id);
      return run;
    }),
  };
}
