import type { AgentDefinition } from "../agent/agent.ts";
import type { RuntimeBackend, TransitionRequest } from "../backend/backend.ts";
import { type EnvelopeOutcome, WorkflowEnvelope } from "../core/envelope.ts";
import type { EnvelopeHost } from "../core/envelope-host.ts";
import { LeaseLostError, RuntimeClosedError } from "../core/errors.ts";
import type { Actor, RunRecord, TransitionRecord, Versions } from "../core/records.ts";
import { serializeError } from "../core/serialize.ts";
import type { Logger } from "../runtime/logger.ts";
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
}

/** What the worker needs from the runtime. */
export interface WorkerDeps {
  backend: RuntimeBackend;
  logger: Logger;
  agent(name: string): AgentDefinition | undefined;
  /** The agents this worker can run: it claims runs of these only. */
  agentNames: readonly string[];
  host(run: RunRecord, envelope: () => WorkflowEnvelope): EnvelopeHost;
  versions(run: RunRecord): Versions;
  onTransition(transition: TransitionRecord, run: RunRecord): void;
}

interface Active {
  run: RunRecord;
  envelope: WorkflowEnvelope | undefined;
  done: Promise<void>;
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
  #stopped = true;

  constructor(deps: WorkerDeps, options: WorkerOptions = {}) {
    this.#deps = deps;
    const leaseMs = options.leaseMs ?? 15_000;
    this.#opts = {
      concurrency: options.concurrency ?? 16,
      leaseMs,
      // With wake-ups from the backend, polling is only the fallback.
      pollIntervalMs: options.pollIntervalMs ?? (deps.backend.subscribe ? 2000 : 500),
      maxAutoRecoveries: options.maxAutoRecoveries ?? 3,
      detectDeadLocalOwners: options.detectDeadLocalOwners ?? true,
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
        void this.recover().then(() => this.poke());
      }, this.#opts.pollIntervalMs),
    );
    for (const t of this.#timers) t.unref?.();
    void this.recover().then(() => this.poke());
  }

  /** Looks for claimable runs now (called when a run is started or resumed in this process). */
  poke(): void {
    if (this.#stopped) return;
    if (this.#claiming) {
      this.#claimAgain = true;
      return;
    }
    this.#claiming = this.#claimLoop()
      .catch((error: unknown) => this.#deps.logger.error("claim failed", { error: String(error) }))
      .finally(() => {
        this.#claiming = undefined;
        if (this.#claimAgain) {
          this.#claimAgain = false;
          this.poke();
        }
      });
  }

  async #claimLoop(): Promise<void> {
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

  #drive(run: RunRecord): void {
    const active: Active = { run, envelope: undefined, done: Promise.resolve() };
    this.#active.set(run.id, active);
    active.done = this.#execute(active)
      .catch((error: unknown) => {
        if (error instanceof LeaseLostError || error instanceof RuntimeClosedError) {
          this.#deps.logger.warn(`dropped run ${run.id}: ${(error as Error).message}`);
        } else {
          this.#deps.logger.error(`run ${run.id} could not be driven`, { error: serializeError(error) });
        }
      })
      .finally(() => {
        this.#active.delete(run.id);
        this.poke();
      });
  }

  async #execute(active: Active): Promise<void> {
    const claimedRun = active.run;
    const agent = this.#deps.agent(claimedRun.agent);
    const actor: Actor = { kind: "worker", id: this.id };
    const started = await this.#transition(claimedRun, {
      to: "RUNNING",
      actor,
      reason:
        claimedRun.state === "PENDING"
          ? `claimed by worker ${this.id}`
          : `resumed from checkpoint by worker ${this.id}`,
    });
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
    const journal = await this.#deps.backend.loadSteps(started.id);
    const envelope: WorkflowEnvelope = new WorkflowEnvelope({
      run: started,
      agent,
      journal,
      host: this.#deps.host(started, () => envelope),
    });
    active.envelope = envelope;
    // Shutdown may have stopped the runs it held while this one was still being set up.
    if (this.#closing) envelope.stop(this.#closing);
    const outcome: EnvelopeOutcome = await envelope.execute();
    if (outcome.kind === "stopped") {
      // Lease lost: the run is someone else's. Shutdown: `shutdown()` records INTERRUPTED itself.
      if (outcome.reason instanceof LeaseLostError) {
        this.#deps.logger.warn(`dropped run ${claimedRun.id}: ${outcome.reason.message}`);
        return;
      }
      if (outcome.reason instanceof RuntimeClosedError) return;
      // A journal write failed (the envelope stopped itself): hand the run back at once rather
      // than leave it RUNNING under a live lease; recovery resumes it, within its bound.
      const why = outcome.reason instanceof Error ? outcome.reason.message : String(outcome.reason);
      await this.#transition(active.run, {
        to: "INTERRUPTED",
        actor,
        reason: `worker ${this.id} stopped the run: a journal write failed (${firstLine(why)})`,
        patch: { releaseLease: true },
      });
      return;
    }
    if (outcome.kind === "completed") {
      await this.#transition(active.run, {
        to: "COMPLETED",
        actor,
        reason: "workflow returned",
        patch: { output: outcome.output, releaseLease: true },
      });
    } else {
      await this.#transition(active.run, {
        to: "FAILED",
        actor,
        reason: outcome.error.code
          ? `${outcome.error.code}: ${firstLine(outcome.error.message)}`
          : `workflow threw ${outcome.error.name}: ${firstLine(outcome.error.message)}`,
        patch: { error: outcome.error, releaseLease: true },
      });
    }
  }

  async #transition(
    run: RunRecord,
    change: Pick<TransitionRequest, "to" | "actor" | "reason" | "patch" | "pausedReason">,
    fence: TransitionRequest["fence"] = { epoch: run.epoch },
  ): Promise<RunRecord> {
    const result = await this.#deps.backend.transition({
      runId: run.id,
      from: run.state,
      versions: this.#deps.versions(run),
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
      const lost = await this.#deps.backend.renewLeases({
        workerId: this.id,
        now: Date.now(),
        leaseMs: this.#opts.leaseMs,
        runs: [...this.#active.values()].map((a) => ({ runId: a.run.id, epoch: a.run.epoch })),
      });
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
   * reason), then INTERRUPTED runs within the automatic-recovery bound become RESUMING.
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
      for (const run of lapsed) await this.#interruptLost(run, now);
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
    } catch (error) {
      this.#deps.logger.warn("recovery sweep failed", { error: String(error) });
    }
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
      await this.#transition(current, {
        to: "INTERRUPTED",
        actor: { kind: "worker", id: this.id },
        reason: `worker ${this.id} shut down (${why}) with the run in flight; grace of ${graceMs} ms ran out`,
        // A deploy is not a crash: it must not use up the bound on automatic recoveries.
        patch: { releaseLease: true, resetRecoveries: true },
      }).catch((error: unknown) => this.#ignoreRace(error));
    }
  }
}

function firstLine(text: string): string {
  const line = text.split("\n")[0] ?? "";
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
