import { InvalidInputError, LeaseLostError } from "../../core/errors.ts";
import type {
  AcceptanceRecord,
  RunRecord,
  SignalRecord,
  StepRecord,
  TransitionRecord,
  WaitRecord,
} from "../../core/records.ts";
import { OWNED_STATES } from "../../core/run-state.ts";
import type { RuntimeBackend } from "../backend.ts";
import type { ForkRunRequest, ForkRunResult } from "../contract/fork-store.ts";
import type { ImportRunInput, ImportRunResult } from "../contract/import-store.ts";
import type { ClaimRequest, RenewRequest } from "../contract/lease-store.ts";
import type { PruneRunsRequest, PruneRunsResult } from "../contract/prune-store.ts";
import type { CreateRunInput, CreateRunResult, RunCounts, RunFilter } from "../contract/run-store.ts";
import type { SignalRequest, SignalResult } from "../contract/signal-store.ts";
import type { StopRunRequest } from "../contract/stop-store.ts";
import type { TransitionFeedPage, TransitionFeedRequest } from "../contract/transition-feed.ts";
import type { TransitionRequest } from "../contract/transition-store.ts";
import type { ResolveWaitRequest, ResolveWaitResult, SuspendRequest, SuspendResult } from "../contract/wait-store.ts";
import type { Wake } from "../contract/wake-ups.ts";
import { planChildSweep } from "../rules/child-sweep-rules.ts";
import { type EndContext, planTransition } from "../rules/ending-rules.ts";
import { planFork } from "../rules/fork-rules.ts";
import { planImport } from "../rules/import-rules.ts";
import { claimed, countRunRecords, nextClaim } from "../rules/lease-rules.ts";
import { hasEnded, type Plan } from "../rules/plan.ts";
import { applyAcceptance, pendingRun } from "../rules/run-rules.ts";
import { planSignal, signalTarget } from "../rules/signal-rules.ts";
import { planStop } from "../rules/stop-rules.ts";
import { planDue, planResolveWait, planSuspend } from "../rules/wait-rules.ts";
import { MemoryFeed } from "./memory-feed.ts";
import { MemoryRateLimits, MemorySchedules } from "./memory-flow.ts";
import { pruneMemoryRuns } from "./memory-prune.ts";
/**
 * Keeps everything in this process's memory, for tests and quick starts (the default backend when a
 * `Runtime` is given none): nothing survives the process. A prune leaves holes in its feed.
 */
export class InMemoryBackend implements RuntimeBackend {
  readonly name = "memory";
  readonly #runs = new Map<string, RunRecord>();
  readonly #keys = new Map<string, string>();
  readonly #transitions = new Map<string, TransitionRecord[]>();
  readonly #steps = new Map<string, Map<number, StepRecord>>();
  readonly #listeners = new Set<(wake: Wake) => void>();
  readonly #waits = new Map<string, Map<string, WaitRecord>>(); // by run, then by wait id
  /** Signals by run, then by message id (insertion order = arrival order). */
  readonly #signals = new Map<string, Map<string, SignalRecord>>();
  readonly #feed = new MemoryFeed();
  /** Schedules and rate limits (`ScheduleStore`, `RateLimitStore`). */
  readonly schedules = new MemorySchedules();
  readonly rateLimits = new MemoryRateLimits();
  async init(): Promise<void> {}
  async close(): Promise<void> {}

  async createRun(input: CreateRunInput): Promise<CreateRunResult> {
    const keyId = input.key === null ? null : `${input.agent}\u0000${input.workflow}\u0000${input.key}`;
    if (keyId !== null) {
      const existing = this.#keys.get(keyId);
      if (existing) return { run: { ...(this.#runs.get(existing) as RunRecord) }, created: false };
    }
    if (this.#runs.has(input.id))
      throw new InvalidInputError(`run id "${input.id}" already exists; run ids must be unique`);
    const { run, transition } = pendingRun(input);
    this.#runs.set(run.id, run);
    if (keyId !== null) this.#keys.set(keyId, run.id);
    this.#transitions.set(run.id, [transition]);
    this.#feed.push(transition);
    this.#wake({ kind: "runnable", runId: run.id });
    this.#steps.set(run.id, new Map());
    return { run: { ...run }, created: true, transition: structuredClone(transition) };
  }

  async forkRun(request: ForkRunRequest): Promise<ForkRunResult> {
    const planned = planFork(this.#runs.get(request.forkedFrom.runId), request);
    const created = await this.createRun(request.run);
    if (!created.created) throw new InvalidInputError(`run id "${request.run.id}" already exists`);
    this.#runs.set(planned.run.id, { ...planned.run });
    this.#steps.set(planned.run.id, new Map(planned.steps.map((step) => [step.seq, copyStep(step, 0)])));
    this.#runs.set(planned.source.id, planned.source);
    return { run: { ...planned.run }, transition: created.transition, source: { ...planned.source } };
  }

  async importRun(input: ImportRunInput): Promise<ImportRunResult> {
    const { run } = input;
    const keyId = run.key === null ? null : `${run.agent}\u0000${run.workflow}\u0000${run.key}`;
    const byKey = keyId === null ? undefined : this.#runs.get(this.#keys.get(keyId) ?? "");
    const planned = planImport(structuredClone(input), this.#runs.get(run.id), byKey);
    if ("existing" in planned) return { run: { ...planned.existing.run }, created: false };
    this.#apply(planned.plan);
    if (keyId !== null) this.#keys.set(keyId, run.id);
    const stored = this.#steps.get(run.id) as Map<number, StepRecord>;
    for (const step of planned.steps) stored.set(step.seq, copyStep(step, step.epoch));
    return { run: { ...planned.run }, created: true };
  }

  async pruneRuns(request: PruneRunsRequest): Promise<PruneRunsResult> {
    const tables = { runs: this.#runs, keys: this.#keys, transitions: this.#transitions, steps: this.#steps };
    return pruneMemoryRuns({ ...tables, waits: this.#waits, signals: this.#signals, feed: this.#feed }, request);
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const run = this.#runs.get(runId);
    return run ? { ...run } : undefined;
  }

  async listRuns(filter: RunFilter = {}): Promise<RunRecord[]> {
    const states = filter.state === undefined ? undefined : new Set([filter.state].flat());
    const all = [...this.#runs.values()]
      .filter(
        (r) =>
          (filter.agent === undefined || r.agent === filter.agent) &&
          (filter.parentRunId === undefined || r.parentRunId === filter.parentRunId) &&
          (filter.workflow === undefined || r.workflow === filter.workflow) &&
          (states === undefined || states.has(r.state)),
      )
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1));
    const offset = filter.offset ?? 0;
    return all.slice(offset, offset + (filter.limit ?? 100)).map((r) => ({ ...r }));
  }

  async countRuns(now: number): Promise<RunCounts> {
    return countRunRecords(this.#runs.values(), now);
  }

  async claimRun(request: ClaimRequest): Promise<RunRecord | undefined> {
    const run = nextClaim([...this.#runs.values()], request);
    if (!run) return undefined;
    const next = claimed(run, request.workerId, request.now, request.leaseMs);
    this.#runs.set(run.id, next);
    return { ...next };
  }

  async renewLeases(request: RenewRequest): Promise<string[]> {
    const lost: string[] = [];
    for (const { runId, epoch } of request.runs) {
      const run = this.#runs.get(runId);
      if (!run || run.epoch !== epoch || run.leaseOwner !== request.workerId) {
        lost.push(runId);
        continue;
      }
      this.#runs.set(runId, { ...run, leaseExpiresAt: request.now + request.leaseMs });
    }
    return lost;
  }

  async listExpiredLeases(now: number, limit: number): Promise<RunRecord[]> {
    return [...this.#runs.values()]
      .filter(
        (r) =>
          (OWNED_STATES.has(r.state) || r.state === "PENDING") && r.leaseExpiresAt !== null && r.leaseExpiresAt <= now,
      )
      .sort((a, b) => (a.leaseExpiresAt as number) - (b.leaseExpiresAt as number))
      .slice(0, limit)
      .map((r) => ({ ...r }));
  }

  async listRecoverable(maxRecoveries: number, limit: number): Promise<RunRecord[]> {
    return [...this.#runs.values()]
      .filter((r) => r.state === "INTERRUPTED" && r.recoveries < maxRecoveries)
      .sort((a, b) => a.updatedAt - b.updatedAt)
      .slice(0, limit)
      .map((r) => ({ ...r }));
  }

  async transition(request: TransitionRequest): Promise<{ run: RunRecord; transition: TransitionRecord }> {
    const run = this.#runs.get(request.runId);
    const end = run && hasEnded(request.to) ? this.#endContext(run) : undefined;
    const { plan, run: next, transition } = planTransition(end ? { run, request, end } : { run, request });
    if (request.successor && this.#runs.has(request.successor.id)) {
      throw new InvalidInputError(`run id "${request.successor.id}" already exists; run ids must be unique`);
    }
    for (const step of request.steps ?? []) {
      if (step.runId !== request.runId) throw new InvalidInputError("a transition's steps must be steps of its run");
    }
    this.#apply(plan);
    // Under the transition's fence (checked by planTransition), with the epoch it leaves.
    const stored = this.#steps.get(request.runId) as Map<number, StepRecord>;
    for (const step of request.steps ?? []) stored.set(step.seq, copyStep(step, next.epoch));
    const successor = request.successor;
    if (successor && successor.key !== null) {
      // The successor takes the key over: starting again with it finds the newest run of the chain.
      this.#keys.set(`${successor.agent}\u0000${successor.workflow}\u0000${successor.key}`, successor.id);
    }
    return { run: { ...next }, transition };
  }

  async suspend(request: SuspendRequest): Promise<SuspendResult> {
    const run = this.#runs.get(request.runId);
    if (!run) throw new LeaseLostError(`run ${request.runId} does not exist`);
    const stored = this.#runWaits(run.id);
    const childIds = new Set([...stored, ...request.waits].filter((w) => w.kind === "child").map((w) => w.name));
    const { plan, result } = planSuspend({
      run,
      request,
      stored,
      inbox: [...(this.#signals.get(run.id)?.values() ?? [])],
      children: [...childIds].map((id) => this.#runs.get(id)).filter((r): r is RunRecord => r !== undefined),
    });
    this.#apply(plan);
    return structuredClone(result) as SuspendResult;
  }

  async loadWaits(runId: string): Promise<WaitRecord[]> {
    return structuredClone(this.#runWaits(runId));
  }

  async resolveWait(request: ResolveWaitRequest): Promise<ResolveWaitResult> {
    const run = this.#runs.get(request.runId);
    const wait = this.#waits.get(request.runId)?.get(request.waitId);
    const { plan, ...result } = planResolveWait({ run, wait: wait && structuredClone(wait), request });
    this.#apply(plan);
    return structuredClone(result);
  }

  async deliverSignal(request: SignalRequest): Promise<SignalResult> {
    const run = this.#runs.get(request.runId);
    const inbox = this.#signals.get(request.runId);
    const existing = inbox?.get(request.messageId);
    const openWaits = run ? this.#runWaits(run.id).filter((w) => w.status === "open") : [];
    const counted = run && !existing && request.maxUnread !== undefined && !signalTarget(openWaits, request);
    const { plan, ...result } = planSignal({
      run,
      request,
      existing,
      openWaits,
      unread: counted ? [...(inbox?.values() ?? [])].filter((s) => s.consumedBy === null).length : undefined,
    });
    this.#apply(plan);
    return structuredClone(result);
  }

  async listSignals(runId: string): Promise<SignalRecord[]> {
    return structuredClone([...(this.#signals.get(runId)?.values() ?? [])]);
  }

  async fireDueWaits(now: number, limit: number): Promise<WaitRecord[]> {
    const due = [...this.#waits.values()]
      .flatMap((m) => [...m.values()])
      .filter((w) => w.status === "open" && w.dueAt !== null && w.dueAt <= now)
      .sort((a, b) => (a.dueAt as number) - (b.dueAt as number))
      .slice(0, limit);
    const resolved: WaitRecord[] = [];
    for (const runId of new Set(due.map((w) => w.runId))) {
      const run = this.#runs.get(runId) as RunRecord;
      const result = planDue({ run, due: due.filter((w) => w.runId === runId), now, versions: run.versions });
      this.#apply(result.plan);
      resolved.push(...result.resolved);
    }
    return structuredClone(resolved);
  }

  async resolveEndedChildWaits(now: number, limit: number): Promise<WaitRecord[]> {
    const resolved: WaitRecord[] = [];
    let swept = 0;
    for (const [runId, waits] of this.#waits) {
      if (swept >= limit) break;
      const run = this.#runs.get(runId) as RunRecord;
      const open = [...waits.values()].filter((w) => w.kind === "child" && w.status === "open");
      const children = open.map((w) => this.#runs.get(w.name)).filter((c): c is RunRecord => c !== undefined);
      // The runs the planner has something to do for (as the SQL backends select them).
      if (hasEnded(run.state) || !children.some((c) => hasEnded(c.state))) continue;
      swept += 1;
      const result = planChildSweep({ run, waits: open, children, at: now });
      this.#apply(result.plan);
      resolved.push(...result.resolved);
    }
    return structuredClone(resolved);
  }

  async nextDueAt(): Promise<number | null> {
    let next: number | null = null;
    for (const waits of this.#waits.values()) {
      for (const w of waits.values()) {
        if (w.status === "open" && w.dueAt !== null && (next === null || w.dueAt < next)) next = w.dueAt;
      }
    }
    return next;
  }

  async requestStop(request: StopRunRequest): Promise<{ run: RunRecord; transitions: TransitionRecord[] }> {
    const run = this.#runs.get(request.runId);
    const plan = planStop({ run, request });
    this.#apply(plan);
    return { run: { ...(this.#runs.get(request.runId) as RunRecord) }, transitions: plan.transitions };
  }

  async listStopRequested(workerId: string): Promise<string[]> {
    return [...this.#runs.values()].filter((r) => r.leaseOwner === workerId && r.stopRequest).map((r) => r.id);
  }

  async recordAcceptance(runId: string, acceptance: AcceptanceRecord): Promise<RunRecord> {
    const run = applyAcceptance(this.#runs.get(runId), runId, structuredClone(acceptance));
    this.#runs.set(run.id, run);
    return structuredClone(run);
  }

  /** What `planEnd` needs of a run that ends now. */
  #endContext(run: RunRecord): EndContext {
    const parent = run.parentRunId === null ? undefined : this.#runs.get(run.parentRunId);
    return {
      openWaits: this.#runWaits(run.id).filter((w) => w.status === "open"),
      parent,
      parentWait: parent
        ? this.#runWaits(parent.id).find((w) => w.kind === "child" && w.name === run.id && w.status === "open")
        : undefined,
      children: [...this.#runs.values()].filter((r) => r.parentRunId === run.id && !hasEnded(r.state)),
    };
  }

  #runWaits(runId: string): WaitRecord[] {
    return [...(this.#waits.get(runId)?.values() ?? [])].sort((a, b) => a.seq - b.seq || (a.id < b.id ? -1 : 1));
  }

  /** Writes a plan (one "transaction": nothing here awaits) and sends its wake-ups. */
  #apply(plan: Plan): void {
    for (const run of plan.created) {
      this.#runs.set(run.id, { ...run });
      this.#transitions.set(run.id, []);
      this.#steps.set(run.id, new Map());
    }
    for (const run of plan.runs.values()) this.#runs.set(run.id, { ...run });
    for (const t of plan.transitions) {
      (this.#transitions.get(t.runId) as TransitionRecord[]).push(t);
      this.#feed.push(t);
    }
    for (const w of plan.waits) {
      const waits = this.#waits.get(w.runId) ?? new Map<string, WaitRecord>();
      this.#waits.set(w.runId, waits);
      waits.set(w.id, structuredClone(w));
    }
    for (const s of plan.signals) {
      const inbox = this.#signals.get(s.runId) ?? new Map<string, SignalRecord>();
      this.#signals.set(s.runId, inbox);
      inbox.set(s.messageId, { ...s });
    }
    for (const wake of plan.wakes) this.#wake(wake);
  }

  async listTransitions(runId: string): Promise<TransitionRecord[]> {
    return [...(this.#transitions.get(runId) ?? [])];
  }

  async listTransitionsSince(request: TransitionFeedRequest): Promise<TransitionFeedPage> {
    return this.#feed.page(request, this.#runs);
  }

  async latestTransitionCursor(): Promise<string> {
    return this.#feed.latest();
  }

  async saveSteps(steps: readonly StepRecord[], options: { epoch: number; sync: boolean }): Promise<void> {
    const first = steps[0];
    if (!first) return;
    const run = this.#runs.get(first.runId);
    if (!run) throw new LeaseLostError(`run ${first.runId} does not exist; step ${first.seq} not saved`);
    if (run.epoch !== options.epoch) {
      throw new LeaseLostError(
        `run ${first.runId}: step ${first.seq} under lease epoch ${options.epoch} refused, the run is at epoch ${run.epoch}; this worker lost the run`,
      );
    }
    const stored = this.#steps.get(first.runId) as Map<number, StepRecord>;
    for (const step of steps) {
      if (step.runId !== first.runId) throw new InvalidInputError("saveSteps takes the steps of one run");
      stored.set(step.seq, copyStep(step, options.epoch));
    }
  }

  async subscribe(listener: (wake: Wake) => void): Promise<() => Promise<void>> {
    this.#listeners.add(listener);
    return async () => void this.#listeners.delete(listener);
  }

  /** After the write, like a commit: listeners run on a later tick, never inside the caller's write. */
  #wake(wake: Wake): void {
    if (this.#listeners.size === 0) return;
    queueMicrotask(() => {
      for (const listener of this.#listeners) listener(wake);
    });
  }

  async loadSteps(runId: string): Promise<StepRecord[]> {
    const steps = this.#steps.get(runId);
    if (!steps) return [];
    return [...steps.values()].sort((a, b) => a.seq - b.seq).map((s) => copyStep(s, s.epoch));
  }
}

/** A copy of a step stamped with `epoch`, sharing nothing mutable with it (`effect` only when set). */
function copyStep(step: StepRecord, epoch: number): StepRecord {
  const { effect, ...rest } = step;
  const copy: StepRecord = { ...rest, attempts: step.attempts.map((a) => ({ ...a })), epoch };
  if (effect !== undefined) copy.effect = structuredClone(effect);
  return copy;
}
