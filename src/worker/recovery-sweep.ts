import type { RunRecord } from "../core/records.ts";
import { leaseTakenOver } from "../core/telemetry/metrics.ts";
import { ignoreRace, writeTransition } from "./run-transitions.ts";
import { sweepEndedRunSandboxes } from "./sandbox-cleanup.ts";
import { isDeadLocalOwner } from "./worker-id.ts";
import type { WorkerDeps, WorkerSettings } from "./worker-options.ts";

/** What a recovery sweep needs from its worker. */
export interface RecoverySweepHost {
  readonly workerId: string;
  readonly deps: WorkerDeps;
  readonly settings: WorkerSettings;
  /** True once shutdown began: nothing is swept. */
  stopped(): boolean;
  /** Looks for claimable runs now. */
  poke(): void;
  /** Claims a PENDING run from its lost owner and drives it (`ClaimLoop.takeOver`). */
  takeOverClaim(run: RunRecord): Promise<void>;
}

/**
 * Finds the runs whose worker is gone and gives them back to the workers (DESIGN §4, recovery):
 * lost leases recorded INTERRUPTED, lost claims of PENDING runs claimed again, INTERRUPTED runs
 * resumed within the automatic-recovery bound, and — once a lease — child waits left open.
 */
export class RecoverySweep {
  readonly #host: RecoverySweepHost;
  /** When the sweep last looked for child waits left open (see `sweep`). */
  #childWaitsSweptAt = Number.NEGATIVE_INFINITY;
  /** When the sweep last looked for sandboxes whose run has ended. */
  #sandboxesSweptAt = Number.NEGATIVE_INFINITY;

  constructor(host: RecoverySweepHost) {
    this.#host = host;
  }

  /**
   * One recovery sweep: runs whose owner is gone become INTERRUPTED (the lost owner named in the
   * reason), then INTERRUPTED runs within the automatic-recovery bound become RESUMING; and, once a
   * lease, child waits that their child's end left open are resolved (`resolveEndedChildWaits`).
   */
  async sweep(): Promise<void> {
    const host = this.#host;
    if (host.stopped()) return;
    try {
      const now = Date.now();
      for (const run of await this.#lost(now)) {
        if (run.state === "PENDING") await this.#lostClaim(run, now);
        else await this.#interruptLost(run, now);
      }
      await this.#resumeInterrupted();
      // A parent left PAUSED on a child that has ended (its end missed the wait: a race no backend
      // should have) is found as late as a lost worker's run is: within a lease. The read costs
      // what the runs waiting for a child now cost, so once a lease rather than every tick.
      if (now - this.#childWaitsSweptAt >= host.settings.leaseMs) {
        this.#childWaitsSweptAt = now;
        await this.#resolveChildWaits();
      }
      // Sandboxes whose run ended (a worker lost between their destroy and the run's end): as
      // rare, and as cheap to find late.
      const sandbox = host.deps.sandbox;
      if (sandbox && now - this.#sandboxesSweptAt >= host.settings.leaseMs) {
        this.#sandboxesSweptAt = now;
        await sweepEndedRunSandboxes(sandbox, (id) => host.deps.backend.getRun(id), host.deps.logger);
      }
    } catch (error) {
      host.deps.logger.warn({ error: String(error) }, "recovery sweep failed");
    }
  }

  /** Runs whose lease lapsed, and — when asked to tell — those whose owner is a dead process here. */
  async #lost(now: number): Promise<RunRecord[]> {
    const { backend } = this.#host.deps;
    const lapsed = await backend.listExpiredLeases(now, 100);
    if (this.#host.settings.detectDeadLocalOwners) {
      const leased = await backend.listExpiredLeases(Number.MAX_SAFE_INTEGER, 1000);
      for (const run of leased) {
        if (!lapsed.some((r) => r.id === run.id) && run.leaseOwner && isDeadLocalOwner(run.leaseOwner)) {
          lapsed.push(run);
        }
      }
    }
    return lapsed;
  }

  /**
   * A PENDING run claimed by a worker that is gone before it started the run: nothing ran, so
   * there is nothing to record; a lapsed claim is claimed again like any runnable run, and one held
   * by a dead process of this host is taken over now rather than after its lease.
   */
  async #lostClaim(run: RunRecord, now: number): Promise<void> {
    const lapsed = run.leaseExpiresAt !== null && run.leaseExpiresAt <= now;
    if (lapsed) return this.#host.poke();
    if (run.leaseOwner !== null && isDeadLocalOwner(run.leaseOwner)) {
      await this.#host.takeOverClaim(run);
      leaseTakenOver();
    }
  }

  async #interruptLost(run: RunRecord, now: number): Promise<void> {
    const { workerId, deps } = this.#host;
    const owner = run.leaseOwner ?? "unknown";
    const gone = run.leaseExpiresAt !== null && run.leaseExpiresAt <= now ? "its lease lapsed" : "its process is gone";
    await writeTransition(
      deps,
      run,
      {
        to: "INTERRUPTED",
        actor: { kind: "system", id: workerId },
        reason: `worker ${owner} was lost while the run was ${run.state} (${gone}; lease until ${
          run.leaseExpiresAt === null ? "-" : new Date(run.leaseExpiresAt).toISOString()
        })`,
      },
      { takeover: { epoch: run.epoch, leaseExpiresAt: run.leaseExpiresAt } },
    )
      .then(() => leaseTakenOver())
      .catch((error: unknown) => ignoreRace(deps.logger, error));
  }

  /** INTERRUPTED runs within the automatic-recovery bound go RESUMING. */
  async #resumeInterrupted(): Promise<void> {
    const { workerId, deps, settings } = this.#host;
    const recoverable = await deps.backend.listRecoverable(settings.maxAutoRecoveries, 100);
    for (const run of recoverable) {
      await writeTransition(
        deps,
        run,
        {
          to: "RESUMING",
          actor: { kind: "system", id: workerId },
          reason: `automatic recovery ${run.recoveries + 1} of ${settings.maxAutoRecoveries}`,
          patch: { countRecovery: true },
        },
        { unowned: true, now: Date.now() },
      ).catch((error: unknown) => ignoreRace(deps.logger, error));
    }
  }

  /** Child waits their child's end left open are resolved, and the worker looks for their parents. */
  async #resolveChildWaits(): Promise<void> {
    const { deps } = this.#host;
    const swept = await deps.backend.resolveEndedChildWaits(deps.clock.now(), 100);
    if (swept.length === 0) return;
    const waits = swept.map((w) => `${w.id} of run ${w.runId} (child ${w.name})`).join(", ");
    deps.logger.warn(`resolved child waits left open after their child ended: ${waits}`);
    this.#host.poke();
  }
}
