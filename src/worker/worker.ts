import { RuntimeClosedError } from "../core/errors.ts";
import type { RunRecord, TransitionRecord } from "../core/records.ts";
import { ClaimLoop } from "./claim-loop.ts";
import { driveRun } from "./drive-run.ts";
import { DueTimers } from "./due-timers.ts";
import { LeaseRenewal } from "./lease-renewal.ts";
import { RecoverySweep } from "./recovery-sweep.ts";
import { type ExecutionScope, RunExecution } from "./run-execution.ts";
import { newWorkerId } from "./worker-id.ts";
import { type WorkerDeps, type WorkerOptions, type WorkerSettings, workerSettings } from "./worker-options.ts";
import { graceOf, handBackHeld } from "./worker-shutdown.ts";

/**
 * Claims runnable runs under a lease, drives their envelopes, renews the leases it holds,
 * recovers runs whose owner died, and on shutdown records INTERRUPTED for what it still holds.
 *
 * The lifecycle over small parts: the {@link ClaimLoop} fills free slots, a {@link RunExecution}
 * per run drives it (`driveRun`), {@link LeaseRenewal} keeps the leases, {@link DueTimers} fire
 * the waits that come due, a {@link RecoverySweep} each poll takes up runs whose worker is gone,
 * and shutdown gives the runs in flight their grace before handing them back.
 */
export class Worker {
  readonly id = newWorkerId();
  readonly #deps: WorkerDeps;
  readonly #settings: WorkerSettings;
  readonly #executions = new Map<string, RunExecution>();
  readonly #scope: ExecutionScope;
  readonly #claims: ClaimLoop;
  readonly #due: DueTimers;
  readonly #renewal: LeaseRenewal;
  readonly #sweep: RecoverySweep;
  #poller: ReturnType<typeof setInterval> | undefined;
  /** Set when shutdown stops the runs still held; a run whose envelope is built later is stopped too. */
  #closing: RuntimeClosedError | undefined;
  #stopped = true;

  constructor(deps: WorkerDeps, options: WorkerOptions = {}) {
    // Every line the worker logs names it.
    deps = { ...deps, logger: deps.logger.child({ worker: this.id }) };
    this.#deps = deps;
    this.#settings = workerSettings(options, deps.backend);
    const parts = {
      workerId: this.id,
      deps,
      settings: this.#settings,
      stopped: () => this.#stopped,
      poke: () => this.poke(),
    };
    this.#scope = { ...parts, closing: () => this.#closing, armDue: (at) => this.armDue(at) };
    this.#claims = new ClaimLoop({
      ...parts,
      held: () => this.#executions.size,
      drive: (run, started) => this.#drive(run, started),
    });
    this.#due = new DueTimers(parts);
    this.#renewal = new LeaseRenewal({ ...parts, held: () => [...this.#executions.values()] });
    this.#sweep = new RecoverySweep({ ...parts, takeOverClaim: (run) => this.takeOverClaim(run) });
  }

  /** Runs this worker is driving now. */
  get activeRunIds(): string[] {
    return [...this.#executions.keys()];
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#renewal.start();
    this.#poller = setInterval(() => {
      void this.recover().then(() => {
        this.poke();
        void this.fireDue();
        void this.#checkStops();
      });
    }, this.#settings.pollIntervalMs);
    this.#poller.unref?.();
    void this.recover().then(() => {
      this.poke();
      void this.fireDue();
    });
  }

  /**
   * Fires the waits that are due (timers, retry backoffs, timeouts, approval expiries) — their
   * runs go RESUMING — then arms a timer for the next due time.
   */
  fireDue(): Promise<void> {
    return this.#due.fire();
  }

  /** Makes sure the worker looks for due waits at `at` (of the worker's clock). */
  armDue(at: number): void {
    this.#due.arm(at);
  }

  /** A stop (cancel or suspend) was asked of a run: carry it out if this worker holds the run. */
  noticeStop(runId: string): void {
    this.#executions.get(runId)?.noticeStop();
  }

  async #checkStops(): Promise<void> {
    if (this.#executions.size === 0) return;
    try {
      for (const runId of await this.#deps.backend.listStopRequested(this.id)) this.noticeStop(runId);
    } catch (error) {
      this.#deps.logger.warn({ error: String(error) }, "checking stop requests failed");
    }
  }

  /** Looks for claimable runs now (called when a run is started or resumed in this process). */
  poke(): void {
    this.#claims.poke();
  }

  /** Drives a claimed run; `started` is its RUNNING transition when the claim recorded it. */
  #drive(run: RunRecord, started?: TransitionRecord): void {
    const execution = new RunExecution(this.#scope, run);
    this.#executions.set(run.id, execution);
    execution.done = driveRun(execution, started).finally(() => {
      execution.ended();
      this.#executions.delete(run.id);
      this.poke();
    });
  }

  /**
   * One recovery sweep: runs whose owner is gone become INTERRUPTED (the lost owner named in the
   * reason), then INTERRUPTED runs within the automatic-recovery bound become RESUMING; and, once a
   * lease, child waits that their child's end left open are resolved (`resolveEndedChildWaits`).
   */
  recover(): Promise<void> {
    return this.#sweep.sweep();
  }

  /**
   * Claims `run` (PENDING, claimed by a worker known to be gone) from its lost owner and drives
   * it, when this worker runs its agent and has a free slot. `resume` calls it too.
   */
  takeOverClaim(run: RunRecord): Promise<void> {
    return this.#claims.takeOver(run);
  }

  /**
   * Stops claiming, lets runs in flight finish for up to `graceMs`, then records INTERRUPTED for
   * each run still held (reason names this worker and `why`) and releases it.
   */
  async shutdown(graceMs: number, why: string): Promise<void> {
    if (this.#stopped && this.#executions.size === 0) return;
    this.#stopped = true;
    clearInterval(this.#poller);
    this.#poller = undefined;
    this.#due.cancel();
    await this.#claims.current;
    await graceOf([...this.#executions.values()], graceMs);
    this.#closing = new RuntimeClosedError(`worker ${this.id} shut down (${why})`);
    const held = [...this.#executions.values()];
    for (const execution of held) execution.envelope?.stop(this.#closing);
    try {
      await handBackHeld(this.#scope, held, graceMs, why);
    } finally {
      this.#renewal.stop();
    }
  }
}
