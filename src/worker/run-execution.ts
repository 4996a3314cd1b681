import type { TransitionRequest } from "../backend/backend.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
import { WorkflowEnvelope } from "../core/envelope/workflow-envelope.ts";
import { CancelledError, LeaseLostError, RuntimeClosedError } from "../core/errors.ts";
import type { Actor, RunRecord, StepRecord, StopRequest, WaitRecord } from "../core/records.ts";
import type { SpanScope } from "../core/telemetry/spans.ts";
import { firstLine, type RunChange, writeTransition } from "./run-transitions.ts";
import type { WorkerDeps, WorkerSettings } from "./worker-options.ts";

/** What an execution needs from the worker that drives it. */
export interface ExecutionScope {
  readonly workerId: string;
  readonly deps: WorkerDeps;
  readonly settings: WorkerSettings;
  /** Set once shutdown stopped the runs it held: an envelope built later is stopped at once. */
  closing(): RuntimeClosedError | undefined;
  /** True once shutdown began: no new work starts. */
  stopped(): boolean;
  /** Makes sure the worker looks for due waits at `at` (of the worker's clock). */
  armDue(at: number): void;
  /** Looks for claimable runs now. */
  poke(): void;
}

/**
 * One run this worker drives, from its claim to its end (Temporal's `Activity`, for a run): the
 * run as the worker last wrote it, the envelope executing it (whose abort controllers stop its
 * steps), the lease and the local check of it before each step's call, and the stop request being
 * carried out with its cancel grace. `drive-run.ts` drives it; the worker only schedules.
 */
export class RunExecution {
  readonly scope: ExecutionScope;
  readonly runId: string;
  /** What this worker writes on the run's transitions. */
  readonly actor: Actor;
  /** The run as this worker last wrote or claimed it. */
  run: RunRecord;
  /** The envelope executing the run now: its workflow's, or a compensation's. */
  envelope: WorkflowEnvelope | undefined = undefined;
  /** A stop request this worker is carrying out. */
  stop: StopRequest | undefined = undefined;
  /** The span of this execution (`driveRun` starts it): its envelopes' steps start under it. */
  trace: SpanScope | undefined = undefined;
  /** When this worker claimed the run (its clock): the claim-to-start latency counts from it. */
  readonly claimedAt = Date.now();
  /** Settles once the execution has ended (its end recorded, or the run dropped). */
  done: Promise<void> = Promise.resolve();
  /**
   * The lease check before each step's call (`EnvelopeHost.holdLease`), given to each envelope
   * host as it is built: undefined while this worker's own clock says the lease has at least a
   * third of its time left (renewals come every third, so nearly always); otherwise the lease is
   * renewed first, and a run whose renewal is refused or fails is stopped (the step is not
   * called). A worker whose event loop stalled past its lease so never calls a step that another
   * worker, having taken the run over, may have called already.
   */
  readonly holdLease = (): Promise<void> | undefined => {
    if (this.#leaseUntil - Date.now() > this.#renewBelowMs) return undefined;
    this.#renewing ??= this.#renewAlone().finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  };
  /**
   * Until when this worker knows it holds the lease, by its own clock: the time it sent the claim
   * or the last renewal that succeeded, plus the lease.
   */
  #leaseUntil: number;
  readonly #renewBelowMs: number;
  /** A renewal of this run alone, asked for by a step about to run. */
  #renewing: Promise<void> | undefined = undefined;
  #graceTimer: ReturnType<typeof setTimeout> | undefined = undefined;

  constructor(scope: ExecutionScope, run: RunRecord) {
    this.scope = scope;
    this.runId = run.id;
    this.actor = { kind: "worker", id: scope.workerId };
    this.run = run;
    this.#leaseUntil = run.leaseExpiresAt ?? 0;
    this.#renewBelowMs = scope.settings.leaseMs / 3;
  }

  /**
   * Writes a transition of `from` (fenced by its epoch unless `fence` says otherwise) and returns
   * the run after it; an ending carries the usage the envelope counted.
   */
  transition(from: RunRecord, change: RunChange, fence?: TransitionRequest["fence"]): Promise<RunRecord> {
    return writeTransition(this.scope.deps, from, change, fence, this.envelope);
  }

  /**
   * A new envelope on `run`'s journal, with this execution's lease check in its host, tracked as
   * the one executing now; stopped at once when shutdown already stopped the runs it held.
   */
  envelopeFor(
    run: RunRecord,
    agent: AgentDefinition,
    journal: readonly StepRecord[],
    waits?: readonly WaitRecord[],
  ): WorkflowEnvelope {
    const host = this.scope.deps.host(run, () => envelope, this.holdLease);
    const trace = this.trace;
    const envelope: WorkflowEnvelope = new WorkflowEnvelope(
      waits === undefined ? { run, agent, journal, host, trace } : { run, agent, journal, waits, host, trace },
    );
    this.envelope = envelope;
    const closing = this.scope.closing();
    if (closing) envelope.stop(closing);
    return envelope;
  }

  // ── Stops ───────────────────────────────────────────────────────────────────────────────────

  /** A stop (cancel or suspend) was asked of the run: read it, and carry it out. */
  noticeStop(): void {
    if (this.stop) return;
    const { backend, logger } = this.scope.deps;
    void backend
      .getRun(this.runId)
      .then((run) => {
        const request = run?.stopRequest;
        if (!request || this.stop || run.epoch !== this.run.epoch) return;
        this.stop = request;
        this.applyStop();
      })
      .catch((error: unknown) =>
        logger.warn(
          { runId: this.runId, error: String(error) },
          `could not read the stop request of run ${this.runId}`,
        ),
      );
  }

  /** Acts on `stop` for the envelope as it is now (called again when an envelope is built). */
  applyStop(): void {
    const request = this.stop;
    const envelope = this.envelope;
    if (!request || !envelope) return;
    if (request.kind === "suspend") {
      envelope.stop(new RuntimeClosedError(`run ${this.runId} suspended: ${request.reason}`));
      return;
    }
    envelope.cancel(
      new CancelledError(`run ${this.runId} cancelled by ${request.by.kind} ${request.by.id}: ${request.reason}`),
    );
    const graceMs = this.scope.settings.cancelGraceMs;
    clearTimeout(this.#graceTimer);
    this.#graceTimer = setTimeout(
      () => envelope.stop(new CancelledError(`the cancel grace of ${graceMs} ms ran out`)),
      graceMs,
    );
  }

  /** The execution has ended: its cancel grace timer goes. */
  ended(): void {
    clearTimeout(this.#graceTimer);
  }

  // ── The lease ───────────────────────────────────────────────────────────────────────────────

  /** A renewal of the lease sent at `sentAt` (by this worker's clock) succeeded. */
  leaseRenewed(sentAt: number): void {
    this.#leaseUntil = Math.max(this.#leaseUntil, sentAt + this.scope.settings.leaseMs);
  }

  /** Another worker owns the run now: the envelope stops, and the run is dropped. */
  leaseLost(): void {
    this.envelope?.stop(new LeaseLostError(`worker ${this.scope.workerId} lost its lease on run ${this.runId}`));
  }

  async #renewAlone(): Promise<void> {
    const run = this.run;
    const { backend, logger } = this.scope.deps;
    const sentAt = Date.now();
    let why: string | undefined;
    try {
      const lost = await backend.renewLeases({
        workerId: this.scope.workerId,
        now: sentAt,
        leaseMs: this.scope.settings.leaseMs,
        runs: [{ runId: run.id, epoch: run.epoch }],
      });
      if (lost.length === 0) {
        this.leaseRenewed(sentAt);
        return;
      }
      why = "another worker owns it now";
    } catch (error) {
      why = `the renewal failed (${firstLine(error instanceof Error ? error.message : String(error))})`;
    }
    logger.warn({ runId: run.id }, `lease on run ${run.id} ran low before a step and could not be renewed: ${why}`);
    this.envelope?.stop(
      new LeaseLostError(
        `worker ${this.scope.workerId} could not renew its lease on run ${run.id} before calling a step: ${why}`,
      ),
    );
  }
}
