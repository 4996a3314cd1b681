import { setImmediate as nextTurn } from "node:timers/promises";
import type { RunRecord, TransitionRecord } from "../core/records.ts";
import { startReason } from "./run-transitions.ts";
import type { WorkerDeps, WorkerSettings } from "./worker-options.ts";

/**
 * Where the claim loop is (DESIGN §7, claims): one state, changed by a poke, by the turn of the
 * event loop a claim waits, and by the claim's end.
 *
 * - `idle`: no claim under way; a poke starts one.
 * - `waiting`: a claim waits its turn of the event loop before it queries. The pokes of that turn
 *   are taken by it (`waiting-poked`): what they are about is in the store by the time it queries.
 * - `querying`: the claim's queries are on their way.
 * - `querying-took-pokes`: the same, for a claim that took pokes while it waited: if it fails,
 *   those pokes went unanswered, and one claim more answers them.
 * - `querying-poked`: a poke came during the queries, which may have missed what it is about: one
 *   claim more follows, whatever the outcome.
 */
export type ClaimState = "idle" | "waiting" | "waiting-poked" | "querying" | "querying-took-pokes" | "querying-poked";

/** What the claim loop needs from its worker. */
export interface ClaimLoopHost {
  readonly workerId: string;
  readonly deps: WorkerDeps;
  readonly settings: WorkerSettings;
  /** Runs the worker drives now (each holds a slot). */
  held(): number;
  /** True once shutdown began: nothing more is claimed. */
  stopped(): boolean;
  /** Drives a claimed run; `started` is its RUNNING transition when the claim recorded it. */
  drive(run: RunRecord, started?: TransitionRecord): void;
}

/**
 * Fills the worker's free slots with runnable runs, one claim at a time: a poke while a claim is
 * under way is answered by that claim or by one claim more (see {@link ClaimState}).
 */
export class ClaimLoop {
  readonly #host: ClaimLoopHost;
  #state: ClaimState = "idle";
  #claim: Promise<void> | undefined;

  constructor(host: ClaimLoopHost) {
    this.#host = host;
  }

  /** The claim under way, if any (shutdown waits for it). */
  get current(): Promise<void> | undefined {
    return this.#claim;
  }

  /** Looks for claimable runs now (called when a run is started or resumed in this process). */
  poke(): void {
    if (this.#host.stopped()) return;
    switch (this.#state) {
      case "idle":
        this.#state = "waiting";
        this.#claim = this.#round();
        return;
      case "waiting":
        this.#state = "waiting-poked";
        return;
      case "querying":
      case "querying-took-pokes":
        this.#state = "querying-poked";
        return;
      case "waiting-poked":
      case "querying-poked":
        return;
    }
  }

  /** One claim: a turn of the event loop, the queries, then one claim more if it is owed. */
  async #round(): Promise<void> {
    try {
      // One turn of the event loop first: runs that end together (one batch of endings) all free
      // their slots, and one claim fills them rather than a claim for the first slot and another
      // for the rest. The pokes of that turn are taken by this claim.
      await nextTurn();
      this.#state = this.#state === "waiting-poked" ? "querying-took-pokes" : "querying";
      await this.#fill();
    } catch (error) {
      this.#host.deps.logger.error({ error: String(error) }, "claim failed");
      // The pokes it took are not answered: one claim more, as a poke during the queries gets.
      if (this.#state === "querying-took-pokes") this.#state = "querying-poked";
    }
    const again = this.#state === "querying-poked";
    this.#state = "idle";
    this.#claim = undefined;
    if (again) this.poke();
  }

  /** Claims runs until the slots are full or none is left. */
  async #fill(): Promise<void> {
    const host = this.#host;
    const { backend, agentNames } = host.deps;
    const { concurrency, leaseMs } = host.settings;
    const claimRuns = backend.claimRuns?.bind(backend);
    // A backend that claims in batches fills every free slot in one round trip, and records the
    // RUNNING transitions of the PENDING runs it claims with the claim (PostgreSQL: one statement).
    while (claimRuns && !host.stopped() && host.held() < concurrency) {
      const claimed = await claimRuns({
        workerId: host.workerId,
        now: Date.now(),
        leaseMs,
        agents: agentNames,
        limit: concurrency - host.held(),
        start: {
          actor: { kind: "worker", id: host.workerId },
          reason: startReason(host.workerId, "PENDING"),
          versions: Object.fromEntries(agentNames.map((agent) => [agent, host.deps.versions(agent)])),
        },
      });
      for (const { run, started } of claimed) host.drive(run, started);
      if (claimed.length === 0) return;
    }
    while (!host.stopped() && host.held() < concurrency) {
      const run = await backend.claimRun({ workerId: host.workerId, now: Date.now(), leaseMs, agents: agentNames });
      if (!run) return;
      host.drive(run);
    }
  }

  /**
   * Claims `run` (PENDING, claimed by a worker known to be gone) from its lost owner and drives
   * it, when this worker runs its agent and has a free slot.
   */
  async takeOver(run: RunRecord): Promise<void> {
    const host = this.#host;
    if (host.stopped() || run.leaseOwner === null || host.held() >= host.settings.concurrency) return;
    const claimed = await host.deps.backend.claimRun({
      workerId: host.workerId,
      now: Date.now(),
      leaseMs: host.settings.leaseMs,
      runId: run.id,
      agents: host.deps.agentNames,
      takeover: { epoch: run.epoch, leaseOwner: run.leaseOwner },
    });
    if (!claimed) return;
    host.deps.logger.warn(
      { runId: run.id },
      `took over run ${run.id}: worker ${run.leaseOwner} claimed it and is gone`,
    );
    host.drive(claimed);
  }
}
