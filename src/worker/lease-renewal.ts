import type { RunExecution } from "./run-execution.ts";
import type { WorkerDeps, WorkerSettings } from "./worker-options.ts";

/** What lease renewal needs from its worker. */
export interface LeaseRenewalHost {
  readonly workerId: string;
  readonly deps: WorkerDeps;
  readonly settings: WorkerSettings;
  /** The runs the worker drives now. */
  held(): readonly RunExecution[];
}

/**
 * Renews the leases of every run the worker drives, in one request every third of a lease; a run
 * whose lease another worker owns now is stopped (and dropped). Runs apart from the worker's other
 * timers: leases must be renewed until shutdown has let go of every run.
 */
export class LeaseRenewal {
  readonly #host: LeaseRenewalHost;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(host: LeaseRenewalHost) {
    this.#host = host;
  }

  start(): void {
    const renewEvery = Math.max(50, Math.floor(this.#host.settings.leaseMs / 3));
    this.#timer = setInterval(() => void this.#renew(), renewEvery);
    this.#timer.unref?.();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #renew(): Promise<void> {
    const { workerId, deps, settings } = this.#host;
    const held = this.#host.held();
    if (held.length === 0) return;
    try {
      const sentAt = Date.now();
      const lost = await deps.backend.renewLeases({
        workerId,
        now: sentAt,
        leaseMs: settings.leaseMs,
        runs: held.map((execution) => ({ runId: execution.run.id, epoch: execution.run.epoch })),
      });
      for (const execution of held) if (!lost.includes(execution.run.id)) execution.leaseRenewed(sentAt);
      for (const runId of lost) {
        deps.logger.warn({ runId }, `lease on run ${runId} lost; another worker owns it now`);
        held.find((execution) => execution.runId === runId)?.leaseLost();
      }
    } catch (error) {
      deps.logger.warn({ error: String(error) }, "lease renewal failed");
    }
  }
}
