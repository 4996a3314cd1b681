import type { AgentDefinition } from "../agent-definition.ts";
import { HistoryMeter, historySize } from "../history-meter.ts";
import type { Json, RunRecord, StepKind, StepRecord, WaitRecord } from "../records.ts";
import type { SpanScope } from "../telemetry/spans.ts";
import type { EnvelopeHost } from "./envelope-host.ts";
import type { EnvelopeOutcome } from "./envelope-outcome.ts";
import { Governance } from "./governance.ts";
import { Governor } from "./governor.ts";
import { JournalWriter } from "./journal-writer.ts";
import { type BegunStep, ReplayCursor } from "./replay-cursor.ts";
import type { SandboxSlot } from "./sandbox-slot.ts";
import { WaitSteps } from "./wait-steps.ts";

/**
 * What the parts of one envelope share, one per execution of a run: the run and its host, the
 * three abort controllers, the replay cursor, the journal writer, the history meter, the
 * governance, the wait steps, and the steps in flight. The envelope (`WorkflowEnvelope`) owns it;
 * the journaled step, the calls (`calls/`) and the `ctx` object are functions over it.
 */
export class EnvelopeState {
  readonly run: RunRecord;
  readonly agent: AgentDefinition;
  readonly host: EnvelopeHost;
  /** Fired by `stop()`: attempts in flight are aborted and nothing more is written. */
  readonly stopped = new AbortController();
  /** Fired by `cancel()`: attempts see it; unlike `stopped`, results that still arrive are kept. */
  readonly cancelled = new AbortController();
  /**
   * Fired with the first of `stopped` and `cancelled` (by `stop()` and `cancel()`, their only
   * callers): what every step's attempts see. A controller of its own costs less than `AbortSignal.any`.
   */
  readonly attempts = new AbortController();
  readonly cursor: ReplayCursor;
  /** The size of the run's history against its limits (`maxHistoryBytes`, `maxHistoryEvents`). */
  readonly meter: HistoryMeter;
  /** Policies and budget: a refusal ends the run BLOCKED. */
  readonly governance: Governance;
  readonly waits: WaitSteps;
  readonly writer: JournalWriter;
  /** Non-wait steps executing now (a run pauses only when none is). */
  inflight = 0;
  /** Steps executing now, by seq: the evidence of a cancellation. */
  readonly running = new Map<number, StepRecord>();
  /** The steps that were running when `cancel()` was called. */
  cancelledSteps: StepRecord[] | undefined = undefined;
  /** Effect steps executing now: a run does not complete before they settle. */
  readonly effectsInFlight = new Set<Promise<unknown>>();
  /** The sandboxes `ctx.sandbox` made in this execution (or replayed), by name. */
  readonly sandboxes = new Map<string, SandboxSlot>();
  /** The error of the last failed attempt of each model step, for the retry event of the next. */
  readonly modelErrors = new Map<number, string>();
  /** Ends the execution early (a pause, a continue-as-new, an unresolved effect, a refusal). */
  settle: ((outcome: EnvelopeOutcome) => void) | undefined = undefined;
  /** The workflow (or the compensation) has ended: no step may start. */
  finished = false;
  /** The span of this execution (its steps' parent); undefined when it does not record. */
  readonly trace: SpanScope | undefined;
  /** Spans of wait steps still blocked: ended (`waiting`) when the execution ends. */
  readonly openSpans = new Set<SpanScope>();

  constructor(options: {
    run: RunRecord;
    agent: AgentDefinition;
    journal: readonly StepRecord[];
    waits?: readonly WaitRecord[];
    host: EnvelopeHost;
    trace?: SpanScope | undefined;
  }) {
    const { run, host } = options;
    this.run = run;
    this.trace = options.trace?.span.isRecording() ? options.trace : undefined;
    this.agent = options.agent;
    this.host = host;
    this.cursor = new ReplayCursor({
      runId: run.id,
      journal: options.journal,
      host,
      onDiverged: (error) => this.stop(error),
    });
    const history = this.cursor.history;
    this.meter = new HistoryMeter({
      runId: run.id,
      limits: { maxHistoryBytes: host.maxHistoryBytes, maxHistoryEvents: host.maxHistoryEvents },
      loaded: historySize(run, history),
      warn: (message) => host.log("warn", message, { runId: run.id }),
    });
    this.waits = new WaitSteps({
      run,
      host,
      meter: this.meter,
      stored: options.waits ?? [],
      isIdle: () => this.inflight === 0 && !this.finished,
      pause: (outcome) => this.settle?.(outcome),
    });
    const governor = new Governor({ run, policies: host.policies, prices: host.prices, journal: history });
    this.governance = new Governance(governor, (outcome) => this.settle?.(outcome));
    // A journal write that fails (a lost lease, a storage error) stops the run: the workflow must
    // not see it as a step's error and go on, with results it was handed possibly not stored.
    this.writer = new JournalWriter((steps, sync) =>
      host.saveSteps(steps, sync).catch((error: unknown) => {
        this.stop(error);
        throw error;
      }),
    );
  }

  /**
   * Stops the run where it is: attempts in flight are aborted, nothing more is written, and the
   * execution ends with `stopped`.
   */
  stop(reason: unknown): void {
    if (!this.stopped.signal.aborted) this.stopped.abort(reason);
    if (!this.attempts.signal.aborted) this.attempts.abort(reason);
  }

  /**
   * Cancels the run: attempts in flight see their signal fire (a result that still arrives is
   * recorded), no new step starts, and the run is stopped once no step is in flight.
   */
  cancel(reason: Error): void {
    if (this.cancelled.signal.aborted) return;
    this.cancelledSteps = [...this.running.values()];
    this.cancelled.abort(reason);
    if (!this.attempts.signal.aborted) this.attempts.abort(reason);
    if (this.inflight === 0) this.stop(reason);
  }

  /**
   * Takes the next step number for a call (see {@link ReplayCursor.take}): refused once the
   * execution ended, diverged or was cancelled; a new step is held to the history's limits and
   * the budget first (a refusal ends the run BLOCKED).
   */
  begin(kind: StepKind, name: string): BegunStep {
    if (this.finished) {
      throw new Error(`ctx.${kind}("${name}") was called after the workflow finished; await every ctx call`);
    }
    const diverged = this.cursor.diverged;
    if (diverged) throw diverged;
    if (this.cancelled.signal.aborted) throw this.cancelled.signal.reason;
    const begun = this.cursor.take(kind, name);
    if (!begun.recorded) {
      // A new step: refused once the history is at a limit (HistoryLimitError, like StepLimitError).
      this.meter.newStep();
      // The budget is checked before it and it counts from now on.
      this.governance.admit(kind, this.host.now());
    }
    return begun;
  }

  /** A step's record as it starts. */
  newStep(seq: number, kind: StepKind, name: string, args: Json | undefined, at: number, argsDigest = ""): StepRecord {
    return {
      runId: this.run.id,
      seq,
      kind,
      name,
      status: "started",
      argsDigest,
      args,
      result: undefined,
      error: undefined,
      attempts: [],
      heartbeat: undefined,
      usage: undefined,
      startedAt: at,
      endedAt: null,
      epoch: this.run.epoch,
    };
  }

  /** `step` starts executing. */
  enter(step: StepRecord): void {
    this.inflight++;
    this.running.set(step.seq, step);
  }

  /**
   * Step `seq` is no longer executing (it ended, or it waits on a durable timer): a cancelled run
   * stops once none is; otherwise the run may now be blocked on waits only, and pause.
   */
  leave(seq: number): void {
    this.inflight--;
    this.running.delete(seq);
    if (this.cancelled.signal.aborted && this.inflight === 0) this.stop(this.cancelled.signal.reason);
    else this.waits.check();
  }
}
