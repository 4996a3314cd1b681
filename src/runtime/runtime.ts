import { type AgentLike, toAgentDefinition } from "../agent/decorators.ts";
import type { RunFilter, RuntimeBackend } from "../backend/backend.ts";
import type { AgentDefinition, WorkflowInput, WorkflowOutput } from "../core/agent-definition.ts";
import type { Clock } from "../core/clock.ts";
import type { RunEvent, RunEventsOptions } from "../core/events.ts";
import type { Actor, RunRecord, WaitRecord } from "../core/records.ts";
import type { RunContract } from "../core/run-contract.ts";
import type { ScheduleDefinition, ScheduleOptions } from "../core/schedules.ts";
import {
  checkAction,
  checkDecision,
  checkId,
  checkName,
  checkOptionalName,
  checkReconcile,
  checkRunFilter,
  checkSignal,
  checkStartOptions,
  checkVerdict,
} from "./client-checks.ts";
import {
  exportRunContract,
  readHistory,
  recordVerdict,
  reportCosts,
  type VerdictOptions,
} from "./contract-operations.ts";
import type { CostFilter, CostReport } from "./cost-report.ts";
import { type ReconcileOptions, reconcileEffect } from "./effect-operations.ts";
import { type ForkOptions, type ForkResult, forkRun, type RerunOptions, rerunRun } from "./fork-operations.ts";
import { type ImportResult, importRunContract, type MoveOptions, moveRunOut } from "./import-operations.ts";
import { type PruneOptions, type PruneResult, pruneRuns } from "./prune-operations.ts";
import { type ResumeOptions, resumeRun } from "./resume-operations.ts";
import { RunHandle } from "./run-handle.ts";
import type { RunLimits } from "./run-limits.ts";
import { RuntimeInternals, type TransitionListener } from "./runtime-internals.ts";
import type { RunHistory, RuntimeOptions, StartOptions } from "./runtime-options.ts";
import type { RuntimeSchedules } from "./runtime-schedules.ts";
import { schedulesOf } from "./schedules-wiring.ts";
import { startRun } from "./start-operations.ts";
import {
  answerQuestion,
  cancelRun,
  type DecisionOptions,
  decideApproval,
  type SignalOptions,
  sendSignal,
} from "./wait-operations.ts";

/**
 * Wires agents, a backend and an in-process worker, and offers the client operations.
 *
 * The façade: each method checks its arguments and runs an operation of `*-operations.ts`
 * against the machinery in `runtime-internals.ts`.
 *
 * @example
 * const runtime = new Runtime({ agents: [reportBuilder], backend: new SqliteBackend({ path: ".cairn/cairn.db" }) });
 * await runtime.start();
 * const run = await runtime.run(reportBuilder, "build", { quarter: "2026-Q3" }, { key: "report-2026-Q3" });
 * console.log(await run.result());
 */
export class Runtime {
  readonly backend: RuntimeBackend;
  /** The time workflows see. */
  readonly clock: Clock;
  /** The schedules in the backend: list, get, pause, resume, trigger, delete (DESIGN §4 *Schedules*). */
  readonly schedules: RuntimeSchedules;
  readonly #internals: RuntimeInternals;

  constructor(options: RuntimeOptions) {
    this.#internals = new RuntimeInternals(options);
    this.backend = this.#internals.backend;
    this.clock = this.#internals.clock;
    this.schedules = schedulesOf(this, this.#internals);
  }

  /** The agents this runtime runs, in the order they were given. */
  get agents(): readonly AgentDefinition[] {
    return [...this.#internals.agents.values()];
  }

  /** The per-run limits this runtime applies (its options, defaults filled in). */
  get limits(): RunLimits {
    return { ...this.#internals.limits };
  }

  /** The worker id of this runtime's worker (shown in transitions it makes). */
  get workerId(): string | undefined {
    return this.#internals.worker?.id;
  }

  /**
   * Opens the backend and starts the worker. With `handleSignals`, SIGTERM and SIGINT shut the
   * runtime down gracefully (runs still in flight after the grace period become INTERRUPTED).
   */
  async start(options: { handleSignals?: boolean } = {}): Promise<void> {
    await this.#internals.start(options.handleSignals === true);
    this.schedules.startTicking();
  }

  /** Creates a schedule in the backend, or replaces the definition of the one with its id (`RuntimeSchedules.define`). */
  schedule(schedule: ScheduleOptions | ScheduleDefinition): ReturnType<RuntimeSchedules["define"]> {
    return this.schedules.define(schedule);
  }

  /** Starts a run (or returns the existing one for its key). */
  async run<A extends AgentDefinition, K extends keyof A["workflows"] & string>(
    agent: A,
    workflow: K,
    input: WorkflowInput<A, K>,
    options?: StartOptions,
  ): Promise<RunHandle<Awaited<WorkflowOutput<A, K>>>>;
  // A definition object must match the typed overload above; letting it through here would
  // accept any workflow name and input for it.
  async run(
    agent: string | Exclude<AgentLike, AgentDefinition>,
    workflow: string,
    input: unknown,
    options?: StartOptions,
  ): Promise<RunHandle>;
  async run(
    agentRef: string | AgentLike,
    workflow: string,
    input: unknown,
    options: StartOptions = {},
  ): Promise<RunHandle> {
    await this.#internals.ready();
    const agent = this.#internals.agent(
      typeof agentRef === "string" ? checkName(agentRef, "agent") : toAgentDefinition(agentRef).name,
    );
    checkName(workflow, "workflow");
    checkStartOptions(options);
    const { runId, created } = await startRun(this.#internals.startOps(), agent, workflow, input, options);
    return new RunHandle(this, runId, created);
  }

  /** A handle on an existing run. */
  handle(runId: string): RunHandle {
    return new RunHandle(this, runId, false);
  }

  /** The run as stored; throws `RunNotFoundError` when there is none. */
  getRun(runId: string): Promise<RunRecord> {
    return this.#internals.getRun(runId);
  }

  async listRuns(filter: RunFilter = {}): Promise<RunRecord[]> {
    checkRunFilter(filter);
    await this.#internals.readable();
    return this.backend.listRuns(filter);
  }

  /** The run with its transitions and steps. */
  history(runId: string): Promise<RunHistory> {
    return readHistory(this.#internals.contractOps(), runId);
  }

  /**
   * Waits until the run is terminal or NEEDS_RECONCILIATION and returns it (polled, and woken on
   * by the backend's wake-ups). A crash is not an outcome: an INTERRUPTED run that automatic
   * recovery takes up again (recovered fewer than `maxAutoRecoveries` times: this option, else the
   * worker's, default 3) is waited on until it ends for good. INTERRUPTED is returned once that
   * bound is used up, with `maxAutoRecoveries: 0`, and when this runtime shuts down meanwhile.
   */
  waitFor(
    runId: string,
    options: { timeoutMs?: number; pollIntervalMs?: number; maxAutoRecoveries?: number } = {},
  ): Promise<RunRecord> {
    return this.#internals.waitFor(runId, options);
  }

  /**
   * Resumes an INTERRUPTED run, a FAILED one whose error is a replay divergence (the code fixed),
   * or one whose worker is gone (recorded INTERRUPTED first): it goes RESUMING and a worker
   * replays it from its checkpoints.
   */
  async resume(runId: string, options: ResumeOptions = {}): Promise<RunHandle> {
    checkAction(runId, options.by, { reason: options.reason });
    await this.#internals.ready();
    await resumeRun(this.#internals.resumeOps(), runId, options);
    return new RunHandle(this, runId, false);
  }

  /**
   * Sends signal `name` to a run's inbox: it resolves `ctx.waitForSignal(name)` now or when the run
   * gets there. A repeated `messageId` is a duplicate (`duplicate: true`), not delivered twice.
   */
  async signal(
    runId: string,
    name: string,
    payload?: unknown,
    options: SignalOptions = {},
  ): Promise<{ duplicate: boolean; deliveredTo: string | null; messageId: string }> {
    checkSignal(runId, name, options);
    await this.#internals.ready();
    const result = await sendSignal(this.#internals.waitOps(), runId, name, payload, options);
    if (result.transition) this.#internals.worker?.poke();
    return { duplicate: result.duplicate, deliveredTo: result.deliveredTo, messageId: result.signal.messageId };
  }

  /**
   * Answers the question `waitId` (asked with `ctx.askUser`). An answer that does not match the
   * question's schema is refused with `InvalidInputError` naming the problem; the run keeps waiting.
   */
  async answer(
    runId: string,
    waitId: string,
    value: unknown,
    options: { by?: Actor | string } = {},
  ): Promise<WaitRecord> {
    checkAction(runId, options.by);
    checkId(waitId, "wait id");
    await this.#internals.ready();
    const result = await answerQuestion(this.#internals.waitOps(), runId, waitId, value, options);
    if (result.transition) this.#internals.worker?.poke();
    return result.wait;
  }

  /**
   * Approves the approval `approvalId`. Refused (`ApprovalRefusedError`) without the decider's
   * identity, when the decider is not one of its approvers, when `digest` is not the digest of its
   * payload, or once it expired; a second decision is refused with `WaitClosedError`.
   */
  async approve(runId: string, approvalId: string, options: DecisionOptions): Promise<WaitRecord> {
    return this.#decide(runId, approvalId, "approved", options);
  }

  /** Denies the approval `approvalId`; the same rules as {@link Runtime.approve}. */
  async deny(runId: string, approvalId: string, options: DecisionOptions): Promise<WaitRecord> {
    return this.#decide(runId, approvalId, "denied", options);
  }

  async #decide(
    runId: string,
    approvalId: string,
    decision: "approved" | "denied",
    options: DecisionOptions,
  ): Promise<WaitRecord> {
    checkDecision(runId, approvalId, options);
    await this.#internals.ready();
    const result = await decideApproval(this.#internals.waitOps(), runId, approvalId, decision, options);
    if (result.transition) this.#internals.worker?.poke();
    return result.wait;
  }

  /**
   * Cancels a run that has not ended: a PENDING one at once, a PAUSED one by a worker, a running one
   * after its tools' `AbortSignal` fired and at most `cancelGraceMs`, what was in flight recorded.
   * Returns the run as the request left it (`waitFor` it to see it end).
   */
  async cancel(runId: string, options: { by?: Actor | string; reason?: string } = {}): Promise<RunRecord> {
    checkAction(runId, options.by, { reason: options.reason });
    await this.#internals.ready();
    const run = await cancelRun(this.#internals.waitOps(), runId, options);
    this.#internals.worker?.noticeStop(runId);
    this.#internals.worker?.poke();
    return run;
  }

  /**
   * A new run whose journal is the source's up to `fromStep` (exclusive), run on this code, with
   * its lineage kept both ways (`forkedFrom`, `forks`). Copied effects are not applied again;
   * later ones get keys of the new run. DESIGN §4, "Fork and rerun".
   */
  async fork(runId: string, options: ForkOptions): Promise<ForkResult> {
    checkAction(runId, options?.by);
    await this.#internals.ready();
    return forkRun(this.#internals.forkOps(), runId, options);
  }

  /** Reruns a FAILED run from its failed step on this code: a fork recorded as a rerun. */
  async rerun(runId: string, options: RerunOptions = {}): Promise<ForkResult> {
    checkAction(runId, options.by);
    await this.#internals.ready();
    return rerunRun(this.#internals.forkOps(), runId, options);
  }

  /** Fires the timers due now (the worker does this itself; for a test that moved a virtual clock). */
  async fireDueTimers(): Promise<void> {
    await this.#internals.ready();
    await this.#internals.worker?.fireDue();
  }

  /** The waits of a run (questions, approvals, timers, signals, children, retry backoffs). */
  async waits(runId: string): Promise<WaitRecord[]> {
    await this.getRun(runId);
    return this.backend.loadWaits(runId);
  }

  /**
   * Settles an effect whose outcome is unknown (the run is NEEDS_RECONCILIATION): `applied`
   * records `result` and `receipt` and the tool is not run again; `not_applied` lets it run again
   * under its retry policy. The decision is recorded on the effect with who made it, and the run
   * moves RECONCILING -> RUNNING and on.
   */
  async reconcile(runId: string, effectId: string, options: ReconcileOptions): Promise<RunRecord> {
    checkReconcile(runId, effectId, options);
    await this.#internals.ready();
    const run = await reconcileEffect(this.#internals.waitOps(), runId, effectId, options);
    this.#internals.worker?.poke();
    return run;
  }

  /**
   * The run's live events from offset `from` on (DESIGN §8): its transitions, step attempts as they
   * start and end (`step.start`, `step.end`), a retry as soon as an attempt failed (`step.retry`),
   * and the text its model calls stream (`model.retry`: clear the partial text). Ends when the run
   * settles (also in another process), when `signal` fires, or when the runtime closes. Kept in
   * memory (the last 10,000 per run), not journaled: the record is `history(runId)`.
   * @example
   * for await (const event of runtime.events(handle.id)) {
   *   if (event.type === "model.text") process.stdout.write(event.text);
   * }
   */
  events(runId: string, options: RunEventsOptions = {}): AsyncIterable<RunEvent> {
    checkId(runId);
    return this.#internals.readEvents(runId, options);
  }

  /** Calls `listener` for every transition made by this runtime. Returns an unsubscribe function. */
  onTransition(listener: TransitionListener): () => void {
    return this.#internals.onTransition(listener);
  }

  /** Stops the worker: no new claims; runs still in flight after `graceMs` are recorded INTERRUPTED and released. */
  shutdown(options: { graceMs?: number; reason?: string } = {}): Promise<void> {
    return this.#internals.shutdown(options);
  }

  /** Same as `shutdown()`. */
  close(): Promise<void> {
    return this.shutdown();
  }

  /**
   * Deletes ended runs (`states`, default all but INTERRUPTED) older than `olderThan`, with all they
   * own, in batches; never an open run or one with an open parent or child (DESIGN §7, "Retention").
   */
  async prune(options: PruneOptions): Promise<PruneResult> {
    await this.#internals.readable();
    return pruneRuns(this.backend, this.clock, options);
  }

  /**
   * The run's contract: one self-contained record of its job, transitions, checkpoint, retry
   * rules, effects, waits and approvals, recovery, completion, acceptance, usage and journal
   * (see `RunContract`). Throws `RunNotFoundError` for an unknown id.
   */
  async exportRun(runId: string): Promise<RunContract> {
    return exportRunContract(this.#internals.contractOps(), runId);
  }

  /**
   * Recreates a run from its exported contract on this runtime's backend, as it was (DESIGN §5,
   * "Moving a run"): refused with `ContractAlteredError` naming the field when the contract is
   * not what was exported, with `ImportConflictError` when its id or key names another run here.
   * The same contract again returns the run (`created: false`).
   */
  async importRun(contract: unknown): Promise<ImportResult> {
    await this.#internals.ready();
    const result = await importRunContract(this.#internals.contractOps(), contract);
    this.#internals.worker?.poke();
    return result;
  }

  /** Exports a run and ends it here MOVED (`to`: where it went); continue it with `importRun`. */
  async moveRun(runId: string, options: MoveOptions = {}): Promise<RunContract> {
    checkAction(runId, options.by, { to: options.to });
    await this.#internals.ready();
    return moveRunOut(this.#internals.contractOps(), runId, options);
  }

  /**
   * Accepts the outcome of a COMPLETED run: a verdict kept apart from its state. Refused with
   * `RunNotCompletedError` for another state, `AlreadyDecidedError` when it has a verdict already.
   */
  async accept(runId: string, options: VerdictOptions = {}): Promise<RunRecord> {
    checkVerdict(options);
    await this.#internals.ready();
    return recordVerdict(this.#internals.contractOps(), runId, "accepted", options);
  }

  /** Rejects the outcome of a COMPLETED run; the same rules as {@link Runtime.accept}. */
  async reject(runId: string, options: VerdictOptions = {}): Promise<RunRecord> {
    checkVerdict(options);
    await this.#internals.ready();
    return recordVerdict(this.#internals.contractOps(), runId, "rejected", options);
  }

  /** What runs cost (all, or of one agent / workflow), by ending and verdict, per accepted job. */
  async costReport(filter: CostFilter = {}): Promise<CostReport> {
    checkOptionalName(filter.agent, "filter.agent");
    checkOptionalName(filter.workflow, "filter.workflow");
    await this.#internals.readable();
    return reportCosts(this.#internals.contractOps(), filter);
  }
}

export type { RunHistory, RuntimeOptions, StartOptions } from "./runtime-options.ts";
