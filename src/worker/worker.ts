import { setImmediate as nextTurn } from "node:timers/promises";
import type { RuntimeBackend, TransitionRequest } from "../backend/backend.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
import { usageOfSteps } from "../core/budget.ts";
import type { Clock } from "../core/clock.ts";
import type { EnvelopeHost } from "../core/envelope/envelope-host.ts";
import type { EnvelopeOutcome, InFlightStep } from "../core/envelope/envelope-outcome.ts";
import { WorkflowEnvelope } from "../core/envelope/workflow-envelope.ts";
import {
  CancelledError,
  LeaseLostError,
  RuntimeClosedError,
  type SerializedError,
  StorageError,
  StorageRejectedError,
} from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { Actor, RunRecord, StopRequest, TransitionRecord, Versions } from "../core/records.ts";
import { DEFAULT_MAX_AUTO_RECOVERIES, isTerminal, OWNED_STATES, type RunState } from "../core/run-state.ts";
import { serializeError, storableError } from "../core/serialize.ts";
import { endCancelled } from "./cancel-ending.ts";
import { type CompensationDeps, compensateMode, compensateRun } from "./compensation.ts";
import { versionMismatch } from "./run-endings.ts";

/** Error codes that end a run BLOCKED (governance) rather than FAILED. */
const GOVERNANCE_CODES: ReadonlySet<string> = new Set([
  "APPROVAL_DENIED",
  "APPROVAL_EXPIRED",
  "POLICY_DENIED",
  "BUDGET_EXCEEDED",
]);

import { isDeadLocalOwner, newWorkerId } from "./worker-id.ts";

/** Options of the in-process worker. */
export interface WorkerOptions {
  /** Runs driven at once by this worker. @default 16 */
  concurrency?: number;
  /** How long a claim lasts without renewal; a crashed worker's runs are recovered after this. @default 15000 */
  leaseMs?: number;
  /**
   * How often to look for runs started elsewhere and for lapsed leases. With a backend that sends
   * wake-ups (`subscribe`) this is only the fallback.
   * @default 500, or 2000 when the backend sends wake-ups
   */
  pollIntervalMs?: number;
  /**
   * Automatic recovery of INTERRUPTED runs: each run is resumed at most this many times without
   * an outside `resume`, so a run that crashes its process every time stays INTERRUPTED.
   * @default 3
   */
  maxAutoRecoveries?: number;
  /**
   * Treat a lease as lapsed at once when its owner is a process on this host that no longer
   * exists (checked with signal 0), instead of waiting for the lease to run out.
   * @default true
   */
  detectDeadLocalOwners?: boolean;
  /**
   * How long a cancelled run's steps in flight get to stop after their `AbortSignal` fired before
   * the run is recorded CANCELLED with their outcome unknown.
   * @default 5000
   */
  cancelGraceMs?: number;
}

/** What the worker needs from the runtime. */
export interface WorkerDeps {
  backend: RuntimeBackend;
  logger: Logger;
  agent(name: string): AgentDefinition | undefined;
  /** The agents this worker can run: it claims runs of these only. */
  agentNames: readonly string[];
  /** The envelope host of a run; `holdLease` is the worker's lease check before a step's call. */
  host(run: RunRecord, envelope: () => WorkflowEnvelope, holdLease?: EnvelopeHost["holdLease"]): EnvelopeHost;
  /** The versions a run of `agent` runs under now. */
  versions(agent: string): Versions;
  onTransition(transition: TransitionRecord, run: RunRecord): void;
  /** The clock of timers and wait timeouts. */
  clock: Clock;
  /** A new run id (for a `continueAsNew` successor). */
  newRunId(): string;
}

interface Active {
  run: RunRecord;
  envelope: WorkflowEnvelope | undefined;
  done: Promise<void>;
  /** A stop request this worker is carrying out. */
  stop: StopRequest | undefined;
  graceTimer?: ReturnType<typeof setTimeout> | undefined;
  /**
   * Until when this worker knows it holds the lease, by its own clock: the time it sent the claim
   * or the last renewal that succeeded, plus the lease. Checked before each step's call.
   */
  leaseUntil: number;
  /** A renewal of this run alone, asked for by a step about to run ({@link Worker.holdLease}). */
  renewing?: Promise<void> | undefined;
}

/**
 * Claims runnable runs under a lease, drives their envelopes, renews the leases it holds,
 * recovers runs whose owner died, and on shutdown records INTERRUPTED for what it still holds.
 */
export class Worker {
  readonly id = newWorkerId();
  readonly #deps: WorkerDeps;
  readonly #opts: Required<WorkerOptions>;
  readonly #active = new Map<string, Active>();
  #timers: ReturnType<typeof setInterval>[] = [];
  #renewer: ReturnType<typeof setInterval> | undefined;
  /** Set when shutdown stops the runs still held; a run whose envelope is built later is stopped too. */
  #closing: RuntimeClosedError | undefined;
  #claiming: Promise<void> | undefined;
  #claimAgain = false;
  /** A claim is on its way but has not sent its query yet ({@link Worker.poke}). */
  #claimWaiting = false;
  /** A poke came while the claim waited, and is answered by that claim only if it succeeds. */
  #pokedWhileWaiting = false;
  #stopped = true;
  /** The due time the timer is armed for, and its cancel function. */
  #dueAt = Number.POSITIVE_INFINITY;
  /** When `recover` last swept child waits (see there). */
  #childWaitsSweptAt = Number.NEGATIVE_INFINITY;
  #cancelDue: (() => void) | undefined;

  constructor(deps: WorkerDeps, options: WorkerOptions = {}) {
    this.#deps = deps;
    const leaseMs = options.leaseMs ?? 15_000;
    this.#opts = {
      concurrency: options.concurrency ?? 16,
      leaseMs,
      // With wake-ups from the backend, polling is only the fallback.
      pollIntervalMs: options.pollIntervalMs ?? (deps.backend.subscribe ? 2000 : 500),
      maxAutoRecoveries: options.maxAutoRecoveries ?? DEFAULT_MAX_AUTO_RECOVERIES,
      detectDeadLocalOwners: options.detectDeadLocalOwners ?? true,
      cancelGraceMs: options.cancelGraceMs ?? 5000,
    };
    if (!(leaseMs >= 100)) throw new RangeError(`worker.leaseMs must be at least 100 (got ${leaseMs})`);
  }

  /** Runs this worker is driving now. */
  get activeRunIds(): string[] {
    return [...this.#active.keys()];
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    const renewEvery = Math.max(50, Math.floor(this.#opts.leaseMs / 3));
    // Apart from the other timers: leases must be renewed until shutdown has let go of every run.
    this.#renewer = setInterval(() => void this.#renew(), renewEvery);
    this.#renewer.unref?.();
    this.#timers.push(
      setInterval(() => {
        void this.recover().then(() => {
          this.poke();
          void this.fireDue();
          void this.#checkStops();
        });
      }, this.#opts.pollIntervalMs),
    );
    for (const t of this.#timers) t.unref?.();
    void this.recover().then(() => {
      this.poke();
      void this.fireDue();
    });
  }

  /**
   * Fires the waits that are due (timers, retry backoffs, timeouts, approval expiries) — their
   * runs go RESUMING — then arms a timer for the next due time.
   */
  async fireDue(): Promise<void> {
    if (this.#stopped) return;
    const { backend, clock } = this.#deps;
    try {
      for (;;) {
        const fired = await backend.fireDueWaits(clock.now(), 100);
        if (fired.length > 0) this.poke();
        if (fired.length < 100) break;
      }
      const next = await backend.nextDueAt();
      this.#cancelDue?.();
      this.#cancelDue = undefined;
      this.#dueAt = Number.POSITIVE_INFINITY;
      if (next !== null) this.armDue(next);
    } catch (error) {
      this.#deps.logger.warn("firing due timers failed", { error: String(error) });
    }
  }

  /** Makes sure the worker looks for due waits at `at` (of the worker's clock). */
  armDue(at: number): void {
    if (this.#stopped || at >= this.#dueAt) return;
    this.#cancelDue?.();
    this.#dueAt = at;
    this.#cancelDue = this.#deps.clock.schedule(at, () => {
      this.#dueAt = Number.POSITIVE_INFINITY;
      this.#cancelDue = undefined;
      void this.fireDue();
    });
  }

  /** A stop (cancel or suspend) was asked of a run: carry it out if this worker holds the run. */
  noticeStop(runId: string): void {
    const active = this.#active.get(runId);
    if (!active || active.stop) return;
    void this.#deps.backend
      .getRun(runId)
      .then((run) => {
        const request = run?.stopRequest;
        if (!request || active.stop || run.epoch !== active.run.epoch) return;
        active.stop = request;
        this.#applyStop(active);
      })
      .catch((error: unknown) =>
        this.#deps.logger.warn(`could not read the stop request of run ${runId}`, { error: String(error) }),
      );
  }

  /** Acts on `active.stop` for the envelope as it is now (called again when an envelope is built). */
  #applyStop(active: Active): void {
    const request = active.stop;
    const envelope = active.envelope;
    if (!request || !envelope) return;
    if (request.kind === "suspend") {
      envelope.stop(new RuntimeClosedError(`run ${active.run.id} suspended: ${request.reason}`));
      return;
    }
    envelope.cancel(
      new CancelledError(`run ${active.run.id} cancelled by ${request.by.kind} ${request.by.id}: ${request.reason}`),
    );
    clearTimeout(active.graceTimer);
    active.graceTimer = setTimeout(
      () => envelope.stop(new CancelledError(`the cancel grace of ${this.#opts.cancelGraceMs} ms ran out`)),
      this.#opts.cancelGraceMs,
    );
  }

  async #checkStops(): Promise<void> {
    if (this.#active.size === 0) return;
    try {
      for (const runId of await this.#deps.backend.listStopRequested(this.id)) this.noticeStop(runId);
    } catch (error) {
      this.#deps.logger.warn("checking stop requests failed", { error: String(error) });
    }
  }

  /** Looks for claimable runs now (called when a run is started or resumed in this process). */
  poke(): void {
    if (this.#stopped) return;
    if (this.#claiming) {
      // A claim that has not sent its query yet will see what this poke is about, unless it fails.
      if (this.#claimWaiting) this.#pokedWhileWaiting = true;
      else this.#claimAgain = true;
      return;
    }
    this.#claimWaiting = true;
    this.#pokedWhileWaiting = false;
    this.#claiming = this.#claimLoop()
      .catch((error: unknown) => {
        this.#deps.logger.error("claim failed", { error: String(error) });
        // The pokes it took are not answered: one claim more, as a poke during the query gets.
        if (this.#pokedWhileWaiting) this.#claimAgain = true;
      })
      .finally(() => {
        this.#claiming = undefined;
        if (this.#claimAgain) {
          this.#claimAgain = false;
          this.poke();
        }
      });
  }

  async #claimLoop(): Promise<void> {
    // One turn of the event loop first: runs that end together (one batch of endings) all free
    // their slots, and one claim fills them rather than a claim for the first slot and another
    // for the rest. The pokes of that turn are taken by this claim.
    await nextTurn();
    this.#claimWaiting = false;
    const claimRuns = this.#deps.backend.claimRuns?.bind(this.#deps.backend);
    // A backend that claims in batches fills every free slot in one round trip, and records the
    // RUNNING transitions of the PENDING runs it claims with the claim (PostgreSQL: one statement).
    while (claimRuns && !this.#stopped && this.#active.size < this.#opts.concurrency) {
      const claimed = await claimRuns({
        workerId: this.id,
        now: Date.now(),
        leaseMs: this.#opts.leaseMs,
        agents: this.#deps.agentNames,
        limit: this.#opts.concurrency - this.#active.size,
        start: {
          actor: { kind: "worker", id: this.id },
          reason: this.#startReason("PENDING"),
          versions: Object.fromEntries(this.#deps.agentNames.map((agent) => [agent, this.#deps.versions(agent)])),
        },
      });
      for (const { run, started } of claimed) this.#drive(run, started);
      if (claimed.length === 0) return;
    }
    while (!this.#stopped && this.#active.size < this.#opts.concurrency) {
      const run = await this.#deps.backend.claimRun({
        workerId: this.id,
        now: Date.now(),
        leaseMs: this.#opts.leaseMs,
        agents: this.#deps.agentNames,
      });
      if (!run) return;
      this.#drive(run);
    }
  }

  /** Drives a claimed run; `started` is its RUNNING transition when the claim recorded it. */
  #drive(run: RunRecord, started?: TransitionRecord): void {
    const active: Active = {
      run,
      envelope: undefined,
      done: Promise.resolve(),
      stop: undefined,
      leaseUntil: run.leaseExpiresAt ?? 0,
    };
    this.#active.set(run.id, active);
    active.done = this.#execute(active, started)
      .catch((error: unknown) => {
        if (error instanceof LeaseLostError || error instanceof RuntimeClosedError) {
          this.#deps.logger.warn(`dropped run ${run.id}: ${(error as Error).message}`);
        } else if (error instanceof StorageError) {
          // The store failed under the run (a database restart, a lost connection) and the run
          // could not be handed back (INTERRUPTED not recorded). Not an error of the run: its lease
          // is no longer renewed, and once it lapses any worker records INTERRUPTED and resumes the
          // run from what was committed. A commit that failed on a lost connection may have
          // committed or not; nothing here depends on which, recovery reads the run's row.
          this.#deps.logger.warn(
            `dropped run ${run.id}: ${firstLine(error.message)}; it resumes from its checkpoints once its lease lapses`,
          );
        } else {
          // Not a crash: the store refused what the run wrote (it would refuse it again), or the
          // run could not be set up (a stored option its code cannot take). Ended visibly, with
          // the error, rather than left RUNNING or looping through recoveries.
          this.#deps.logger.error(`run ${run.id} could not be driven`, { error: serializeError(error) });
          return this.#failUndrivable(active, error);
        }
      })
      .finally(() => {
        clearTimeout(active.graceTimer);
        this.#active.delete(run.id);
        this.poke();
      });
  }

  async #execute(active: Active, recorded?: TransitionRecord): Promise<void> {
    const claimedRun = active.run;
    /** The state the run was claimed in (PENDING when the claim recorded its RUNNING transition). */
    const claimedIn = recorded?.from ?? claimedRun.state;
    const agent = this.#deps.agent(claimedRun.agent);
    const actor: Actor = { kind: "worker", id: this.id };
    if (claimedIn === "CANCELLING") {
      // Cancelled while paused or interrupted, or its worker was lost while cancelling: finish the
      // cancellation from the journal (what was cut off is settled first).
      await this.#endCancelled(active);
      return;
    }
    // Policies are checked on resume: a run that started under other policies goes on under the
    // ones in force now, and the transition says so.
    const policies = this.#deps.versions(claimedRun.agent).policy;
    const changed =
      claimedIn !== "PENDING" && agent && claimedRun.versions.policy !== policies
        ? `; policies changed since the run started (${claimedRun.versions.policy ?? "none"} -> ${policies ?? "none"}), the ones in force now apply to its next calls`
        : "";
    let started: RunRecord;
    if (recorded) {
      // The claim recorded PENDING -> RUNNING already (claimRuns with `start`).
      started = claimedRun;
      this.#deps.onTransition(recorded, started);
    } else {
      started = await this.#transition(claimedRun, {
        to: "RUNNING",
        actor,
        reason: `${this.#startReason(claimedRun.state)}${changed}`,
      });
    }
    active.run = started;
    if (!agent) {
      await this.#transition(started, {
        to: "FAILED",
        actor,
        reason: `agent "${started.agent}" is not registered in this runtime`,
        patch: {
          error: {
            name: "UnknownNameError",
            code: "UNKNOWN_AGENT",
            message: `agent "${started.agent}" is not registered in this runtime; start the runtime with it in \`agents\``,
          },
          releaseLease: true,
        },
      });
      return;
    }
    if (started.stopRequest) {
      // Nothing executed here: what a lost worker cut off, or an operator reconciled while a
      // cancel was pending, is read from the journal.
      active.stop = started.stopRequest;
      await this.#carryOutStop(active);
      return;
    }
    const mismatch = versionMismatch(started, agent);
    if (mismatch) {
      await this.#transition(started, {
        to: "FAILED",
        actor,
        reason: `VERSION_MISMATCH: ${mismatch.message}`,
        patch: { error: serializeError(mismatch), releaseLease: true },
      });
      return;
    }
    if (this.#stopped) {
      // Shutdown began while the run was being claimed or moved to RUNNING: no new work starts in a
      // process that is going away. Handed back at once, as the shutdown would after its grace.
      await this.#handBack(started, `worker ${this.id} began shutting down before the run started; handed back`);
      return;
    }
    // A run claimed in PENDING has never run: no step or wait can have been written (each is
    // written under a lease of a RUNNING run), so its first execution reads nothing.
    let fresh = claimedIn === "PENDING";
    for (;;) {
      const [journal, waits] = fresh
        ? [[], []]
        : await Promise.all([this.#deps.backend.loadSteps(started.id), this.#deps.backend.loadWaits(started.id)]);
      fresh = false;
      const envelope: WorkflowEnvelope = new WorkflowEnvelope({
        run: started,
        agent,
        journal,
        waits,
        host: this.#host(active, started, () => envelope),
      });
      active.envelope = envelope;
      // Shutdown may have stopped the runs it held while this one was still being set up.
      if (this.#closing) envelope.stop(this.#closing);
      this.#applyStop(active);
      const outcome: EnvelopeOutcome = await envelope.execute();
      // A workflow that returned before a stop reached it completes: the stop came too late, as
      // it would a moment later (and the results it returned ride with COMPLETED).
      if (active.stop && outcome.kind !== "completed") {
        await this.#carryOutStop(active, envelope.inFlightAtCancel());
        return;
      }
      if (outcome.kind === "paused") {
        const result = await this.#deps.backend.suspend({
          runId: started.id,
          epoch: started.epoch,
          waits: outcome.waits,
          blockedOn: outcome.blockedOn,
          pausedReason: outcome.pausedReason,
          actor,
          reason: outcome.reason,
          versions: this.#deps.versions(started.agent),
          at: this.#deps.clock.now(),
        });
        if (result.paused) {
          this.#deps.onTransition(result.transition, result.run);
          for (const wait of outcome.waits) if (wait.dueAt !== null) this.armDue(wait.dueAt);
          return;
        }
        if (result.stopRequest) {
          active.stop = result.stopRequest;
          await this.#carryOutStop(active, []);
          return;
        }
        continue; // some of its waits are resolved: replay and go on
      }
      await this.#finish(active, outcome);
      return;
    }
  }

  /** Records how an execution ended (anything but a pause). */
  async #finish(active: Active, outcome: Exclude<EnvelopeOutcome, { kind: "paused" }>): Promise<void> {
    const actor: Actor = { kind: "worker", id: this.id };
    const run = active.run;
    if (outcome.kind === "stopped") {
      // Lease lost: the run is someone else's. Shutdown: `shutdown()` records INTERRUPTED itself.
      if (outcome.reason instanceof LeaseLostError) {
        this.#deps.logger.warn(`dropped run ${run.id}: ${outcome.reason.message}`);
        return;
      }
      if (outcome.reason instanceof RuntimeClosedError) return;
      // The store refused a value the run wrote: replaying would write it again. Not a lost worker.
      if (outcome.reason instanceof StorageRejectedError) throw outcome.reason;
      // A journal write failed (the envelope stopped itself): hand the run back at once rather
      // than leave it RUNNING under a live lease; recovery resumes it, within its bound.
      const why = outcome.reason instanceof Error ? outcome.reason.message : String(outcome.reason);
      await this.#transition(run, {
        to: "INTERRUPTED",
        actor,
        reason: `worker ${this.id} stopped the run: a journal write failed (${firstLine(why)})`,
        patch: { releaseLease: true },
      });
      return;
    }
    if (outcome.kind === "continued") {
      const successor = this.#deps.newRunId();
      await this.#transition(run, {
        to: "COMPLETED",
        actor,
        reason: `continued as new run ${successor}`,
        patch: { output: { continuedAs: successor }, releaseLease: true },
        successor: {
          id: successor,
          agent: run.agent,
          workflow: run.workflow,
          key: run.key,
          input: outcome.input,
          versions: this.#deps.versions(run.agent),
          meta: run.meta,
          actor,
          reason: `continues run ${run.id}`,
          at: Date.now(),
          parentRunId: run.parentRunId,
          parentClosePolicy: run.parentClosePolicy,
        },
      });
      this.poke();
      return;
    }
    if (outcome.kind === "needs_reconciliation") {
      await this.#transition(run, {
        to: "NEEDS_RECONCILIATION",
        actor,
        reason: `EFFECT_UNRESOLVED: ${firstLine(outcome.error.message)}`,
        patch: { error: outcome.error, releaseLease: true },
      });
      return;
    }
    if (outcome.kind === "completed") {
      await this.#transition(run, {
        to: "COMPLETED",
        actor,
        reason: "workflow returned",
        patch: { output: outcome.output, releaseLease: true },
        ...(outcome.steps?.length ? { steps: outcome.steps } : {}),
      });
      return;
    }
    // A denied or expired approval the workflow did not handle stops the run by governance.
    const code = outcome.error.code;
    const blocked = GOVERNANCE_CODES.has(code ?? "");
    const agent = this.#deps.agent(run.agent);
    if (agent && compensateMode(run, agent) !== "never") {
      const why = `the workflow ${blocked ? "was blocked" : "failed"} (${code ?? outcome.error.name}: ${firstLine(outcome.error.message)})`;
      if (await compensateRun(this.#compensation(active, agent), run, why, outcome.error)) return;
    }
    await this.#transition(run, {
      to: blocked ? "BLOCKED" : "FAILED",
      actor,
      reason: code
        ? `${code}: ${firstLine(outcome.error.message)}`
        : `workflow threw ${outcome.error.name}: ${firstLine(outcome.error.message)}`,
      patch: { error: outcome.error, releaseLease: true },
    });
  }

  /**
   * Ends a run this worker holds that it cannot drive on (see `#drive`): FAILED with `error`, or
   * CANCELLED when it was being cancelled. Its error is made storable first; if the store refuses
   * even that, a plain one naming the error's class is recorded instead.
   */
  async #failUndrivable(active: Active, error: unknown): Promise<void> {
    const current = await this.#deps.backend.getRun(active.run.id).catch(() => undefined);
    if (!current || current.epoch !== active.run.epoch || current.leaseOwner !== this.id) return;
    if (!OWNED_STATES.has(current.state)) return;
    const serialized = storableError(serializeError(error));
    const to = current.state === "CANCELLING" ? "CANCELLED" : "FAILED";
    const reason = `${serialized.code ?? serialized.name}: ${firstLine(serialized.message)}`;
    const write = (err: SerializedError) =>
      this.#transition(current, {
        to,
        actor: { kind: "worker", id: this.id },
        reason,
        patch: { error: err, releaseLease: true },
      });
    try {
      await write(serialized);
    } catch (again) {
      if (!(again instanceof StorageRejectedError)) {
        this.#deps.logger.error(`run ${current.id} could not be ended ${to}`, { error: String(again) });
        return;
      }
      await write({ name: serialized.name, code: serialized.code ?? "STORAGE_REJECTED", message: reason }).catch(
        (last: unknown) =>
          this.#deps.logger.error(`run ${current.id} could not be ended ${to}`, { error: String(last) }),
      );
    }
  }

  /**
   * Carries out `active.stop` on a run this worker holds in RUNNING. `inFlight`: what the execution
   * here had in flight when the cancel reached it; undefined when nothing executed here.
   */
  async #carryOutStop(active: Active, inFlight?: readonly InFlightStep[]): Promise<void> {
    const request = active.stop as StopRequest;
    // What finished is committed before the run leaves this worker.
    await active.envelope?.flushJournal().catch(() => {});
    if (request.kind === "suspend") {
      await this.#transition(active.run, {
        to: "PAUSED",
        pausedReason: "suspended_orphan",
        actor: request.by,
        reason: `${request.reason}; waits for resume or cancel`,
        patch: { releaseLease: true },
      });
      return;
    }
    active.run = await this.#transition(active.run, {
      to: "CANCELLING",
      actor: request.by,
      reason: `cancel requested by ${request.by.kind} ${request.by.id}: ${request.reason}`,
    });
    await this.#endCancelled(active, inFlight);
  }

  /**
   * CANCELLING -> CANCELLED, with what was in flight and where the run stopped — or, for a run
   * that compensates on cancellation and has applied effects, COMPENSATING and on; or, while an
   * effect's outcome stays unknown, NEEDS_RECONCILIATION with the cancel pending (`endCancelled`).
   */
  async #endCancelled(active: Active, inFlight?: readonly InFlightStep[]): Promise<void> {
    const run = active.run;
    const agent = this.#deps.agent(run.agent);
    const host = this.#deps.host(run, () => active.envelope as WorkflowEnvelope);
    await endCancelled(
      {
        actor: { kind: "worker", id: this.id },
        agent,
        loadSteps: (runId) => this.#deps.backend.loadSteps(runId),
        transition: async (from, change) => {
          active.run = await this.#transition(from, change);
          return active.run;
        },
        compensation: (own) => this.#compensation(active, own),
        now: () => host.now(),
        maxPayloadBytes: host.maxPayloadBytes,
        graceMs: this.#opts.cancelGraceMs,
      },
      run,
      run.stopRequest ?? active.stop,
      inFlight,
    );
  }

  /** What compensating `active`'s run needs from this worker. */
  #compensation(active: Active, agent: AgentDefinition): CompensationDeps {
    return {
      actor: { kind: "worker", id: this.id },
      loadSteps: (runId) => this.#deps.backend.loadSteps(runId),
      transition: async (run, change) => {
        active.run = await this.#transition(run, change);
        return active.run;
      },
      envelope: (run, journal) => {
        const envelope: WorkflowEnvelope = new WorkflowEnvelope({
          run,
          agent,
          journal,
          host: this.#host(active, run, () => envelope),
        });
        active.envelope = envelope;
        if (this.#closing) envelope.stop(this.#closing);
        return envelope;
      },
      stopped: async (run, reason) => {
        active.run = run;
        await this.#finish(active, { kind: "stopped", reason });
      },
    };
  }

  /** The envelope host of `active`'s run, with the lease check before each step's call. */
  #host(active: Active, run: RunRecord, envelope: () => WorkflowEnvelope): EnvelopeHost {
    return this.#deps.host(run, envelope, () => this.#holdLease(active));
  }

  /**
   * Before a step's function runs: undefined while this worker's own clock says the lease has at
   * least a third of its time left (renewals come every third, so nearly always); otherwise the
   * lease is renewed first, and a run whose renewal is refused or fails is stopped (the step is
   * not called). A worker whose event loop stalled past its lease so never calls a step that
   * another worker, having taken the run over, may have called already.
   */
  #holdLease(active: Active): Promise<void> | undefined {
    if (active.leaseUntil - Date.now() > this.#opts.leaseMs / 3) return undefined;
    active.renewing ??= this.#renewOne(active).finally(() => {
      active.renewing = undefined;
    });
    return active.renewing;
  }

  async #renewOne(active: Active): Promise<void> {
    const run = active.run;
    const sentAt = Date.now();
    let why: string | undefined;
    try {
      const lost = await this.#deps.backend.renewLeases({
        workerId: this.id,
        now: sentAt,
        leaseMs: this.#opts.leaseMs,
        runs: [{ runId: run.id, epoch: run.epoch }],
      });
      if (lost.length === 0) {
        active.leaseUntil = Math.max(active.leaseUntil, sentAt + this.#opts.leaseMs);
        return;
      }
      why = "another worker owns it now";
    } catch (error) {
      why = `the renewal failed (${firstLine(error instanceof Error ? error.message : String(error))})`;
    }
    this.#deps.logger.warn(`lease on run ${run.id} ran low before a step and could not be renewed: ${why}`);
    active.envelope?.stop(
      new LeaseLostError(`worker ${this.id} could not renew its lease on run ${run.id} before calling a step: ${why}`),
    );
  }

  /** The reason of a claimed run's move to RUNNING, by the state it was claimed in. */
  #startReason(claimedIn: RunState): string {
    if (claimedIn === "PENDING") return `claimed by worker ${this.id}`;
    if (claimedIn === "RECONCILING") return `reconciled; resumed from checkpoint by worker ${this.id}`;
    return `resumed from checkpoint by worker ${this.id}`;
  }

  async #transition(
    run: RunRecord,
    change: Pick<TransitionRequest, "to" | "actor" | "reason" | "patch" | "pausedReason" | "successor" | "steps">,
    fence: TransitionRequest["fence"] = { epoch: run.epoch },
  ): Promise<RunRecord> {
    // A run's usage (children that ended included) is written with the transition that ends it.
    if (isTerminal(change.to) && change.to !== "INTERRUPTED" && change.patch?.usage === undefined) {
      const known = this.#active.get(run.id)?.envelope?.usage();
      const usage = known ?? usageOfSteps(await this.#deps.backend.loadSteps(run.id));
      change = { ...change, patch: { ...change.patch, usage } };
    }
    const result = await this.#deps.backend.transition({
      runId: run.id,
      from: run.state,
      versions: this.#deps.versions(run.agent),
      at: Date.now(),
      fence,
      ...change,
    });
    this.#deps.onTransition(result.transition, result.run);
    return result.run;
  }

  async #renew(): Promise<void> {
    if (this.#active.size === 0) return;
    try {
      const sentAt = Date.now();
      const held = [...this.#active.values()];
      const lost = await this.#deps.backend.renewLeases({
        workerId: this.id,
        now: sentAt,
        leaseMs: this.#opts.leaseMs,
        runs: held.map((a) => ({ runId: a.run.id, epoch: a.run.epoch })),
      });
      for (const active of held) {
        if (!lost.includes(active.run.id)) active.leaseUntil = Math.max(active.leaseUntil, sentAt + this.#opts.leaseMs);
      }
      for (const runId of lost) {
        const active = this.#active.get(runId);
        this.#deps.logger.warn(`lease on run ${runId} lost; another worker owns it now`);
        active?.envelope?.stop(new LeaseLostError(`worker ${this.id} lost its lease on run ${runId}`));
      }
    } catch (error) {
      this.#deps.logger.warn("lease renewal failed", { error: String(error) });
    }
  }

  /**
   * One recovery sweep: runs whose owner is gone become INTERRUPTED (the lost owner named in the
   * reason), then INTERRUPTED runs within the automatic-recovery bound become RESUMING; and, once a
   * lease, child waits that their child's end left open are resolved (`resolveEndedChildWaits`).
   */
  async recover(): Promise<void> {
    if (this.#stopped) return;
    const { backend } = this.#deps;
    try {
      const now = Date.now();
      const lapsed = await backend.listExpiredLeases(now, 100);
      if (this.#opts.detectDeadLocalOwners) {
        const leased = await backend.listExpiredLeases(Number.MAX_SAFE_INTEGER, 1000);
        for (const run of leased) {
          if (!lapsed.some((r) => r.id === run.id) && run.leaseOwner && isDeadLocalOwner(run.leaseOwner)) {
            lapsed.push(run);
          }
        }
      }
      for (const run of lapsed) {
        if (run.state === "PENDING") await this.#lostClaim(run, now);
        else await this.#interruptLost(run, now);
      }
      const recoverable = await backend.listRecoverable(this.#opts.maxAutoRecoveries, 100);
      for (const run of recoverable) {
        await this.#transition(
          run,
          {
            to: "RESUMING",
            actor: { kind: "system", id: this.id },
            reason: `automatic recovery ${run.recoveries + 1} of ${this.#opts.maxAutoRecoveries}`,
            patch: { countRecovery: true },
          },
          { unowned: true, now: Date.now() },
        ).catch((error: unknown) => this.#ignoreRace(error));
      }
      // A parent left PAUSED on a child that has ended (its end missed the wait: a race no backend
      // should have) is found as late as a lost worker's run is: within a lease. The read costs
      // what the runs waiting for a child now cost, so once a lease rather than every tick.
      if (now - this.#childWaitsSweptAt >= this.#opts.leaseMs) {
        this.#childWaitsSweptAt = now;
        const swept = await backend.resolveEndedChildWaits(this.#deps.clock.now(), 100);
        if (swept.length > 0) {
          const waits = swept.map((w) => `${w.id} of run ${w.runId} (child ${w.name})`).join(", ");
          this.#deps.logger.warn(`resolved child waits left open after their child ended: ${waits}`);
          this.poke();
        }
      }
    } catch (error) {
      this.#deps.logger.warn("recovery sweep failed", { error: String(error) });
    }
  }

  /**
   * A PENDING run claimed by a worker that is gone before it started the run: nothing ran, so
   * there is nothing to record; a lapsed claim is claimed again like any runnable run, and one held
   * by a dead process of this host is taken over now rather than after its lease.
   */
  async #lostClaim(run: RunRecord, now: number): Promise<void> {
    const lapsed = run.leaseExpiresAt !== null && run.leaseExpiresAt <= now;
    if (lapsed) return this.poke();
    if (run.leaseOwner !== null && isDeadLocalOwner(run.leaseOwner)) await this.takeOverClaim(run);
  }

  /**
   * Claims `run` (PENDING, claimed by a worker known to be gone) from its lost owner and drives
   * it, when this worker runs its agent and has a free slot. `resume` calls it too.
   */
  async takeOverClaim(run: RunRecord): Promise<void> {
    if (this.#stopped || run.leaseOwner === null || this.#active.size >= this.#opts.concurrency) return;
    const claimed = await this.#deps.backend.claimRun({
      workerId: this.id,
      now: Date.now(),
      leaseMs: this.#opts.leaseMs,
      runId: run.id,
      agents: this.#deps.agentNames,
      takeover: { epoch: run.epoch, leaseOwner: run.leaseOwner },
    });
    if (!claimed) return;
    this.#deps.logger.warn(`took over run ${run.id}: worker ${run.leaseOwner} claimed it and is gone`);
    this.#drive(claimed);
  }

  async #interruptLost(run: RunRecord, now: number): Promise<void> {
    const owner = run.leaseOwner ?? "unknown";
    const gone = run.leaseExpiresAt !== null && run.leaseExpiresAt <= now ? "its lease lapsed" : "its process is gone";
    await this.#transition(
      run,
      {
        to: "INTERRUPTED",
        actor: { kind: "system", id: this.id },
        reason: `worker ${owner} was lost while the run was ${run.state} (${gone}; lease until ${
          run.leaseExpiresAt === null ? "-" : new Date(run.leaseExpiresAt).toISOString()
        })`,
      },
      { takeover: { epoch: run.epoch, leaseExpiresAt: run.leaseExpiresAt } },
    ).catch((error: unknown) => this.#ignoreRace(error));
  }

  /** Another worker got there first: not an error. */
  #ignoreRace(error: unknown): void {
    const code = (error as { code?: string }).code;
    if (code === "LEASE_LOST" || code === "ILLEGAL_TRANSITION") return;
    this.#deps.logger.warn("recovery step failed", { error: String(error) });
  }

  /**
   * Stops claiming, lets runs in flight finish for up to `graceMs`, then records INTERRUPTED for
   * each run still held (reason names this worker and `why`) and releases it.
   */
  async shutdown(graceMs: number, why: string): Promise<void> {
    if (this.#stopped && this.#active.size === 0) return;
    this.#stopped = true;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    this.#cancelDue?.();
    this.#cancelDue = undefined;
    await this.#claiming;
    const all = () => Promise.all([...this.#active.values()].map((a) => a.done));
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([all(), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    this.#closing = new RuntimeClosedError(`worker ${this.id} shut down (${why})`);
    const held = [...this.#active.values()];
    for (const active of held) active.envelope?.stop(this.#closing);
    try {
      await this.#release(held, graceMs, why);
    } finally {
      clearInterval(this.#renewer);
      this.#renewer = undefined;
    }
  }

  /** Records INTERRUPTED for each stopped run this worker still holds, and releases it. */
  async #release(held: readonly Active[], graceMs: number, why: string): Promise<void> {
    for (const active of held) {
      await active.done;
      // Results of tools that finished are committed, so the next worker does not run them again.
      await active.envelope?.flushJournal().catch(() => {});
      const run = active.run;
      const current = await this.#deps.backend.getRun(run.id);
      if (!current || current.epoch !== run.epoch || current.state !== "RUNNING") continue;
      await this.#handBack(
        current,
        `worker ${this.id} shut down (${why}) with the run in flight; grace of ${graceMs} ms ran out`,
      );
    }
  }

  /** Records INTERRUPTED for a RUNNING run this worker holds at shutdown, and releases it. */
  async #handBack(run: RunRecord, reason: string): Promise<void> {
    await this.#transition(run, {
      to: "INTERRUPTED",
      actor: { kind: "worker", id: this.id },
      reason,
      // A deploy is not a crash: it must not use up the bound on automatic recoveries.
      patch: { releaseLease: true, resetRecoveries: true },
    }).catch((error: unknown) => this.#ignoreRace(error));
  }
}

function firstLine(text: string): string {
  const line = text.split("\n")[0] ?? "";
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
