import type { RuntimeBackend, Wake } from "../backend/backend.ts";
import { InMemoryBackend } from "../backend/memory/memory-backend.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
import { type Clock, systemClock } from "../core/clock.ts";
import {
  InvalidDefinitionError,
  RunNotFoundError,
  RuntimeClosedError,
  StorageError,
  UnknownNameError,
  WaitTimeoutError,
} from "../core/errors.ts";
import type { RunEvent, RunEventsOptions } from "../core/events.ts";
import type { Logger } from "../core/logger.ts";
import { policyVersions, validatePolicies } from "../core/policies.ts";
import { priceTable } from "../core/prices.ts";
import type { RunRecord, TransitionRecord, Versions } from "../core/records.ts";
import { DEFAULT_MAX_AUTO_RECOVERIES, hasOutcome, isSettled } from "../core/run-state.ts";
import { toLogger } from "../core/safe-logger.ts";
import { runTransition } from "../core/telemetry/metrics.ts";
import { McpClients } from "../mcp/mcp-clients.ts";
import type { Worker } from "../worker/worker.ts";
import { watchBacklog } from "./backlog-gauge.ts";
import { checkId } from "./client-checks.ts";
import { consoleLogger } from "./console-logger.ts";
import type { ContractOperationsHost } from "./contract-operations.ts";
import { declaredRateLimits } from "./declared-rate-limits.ts";
import type { ForkOperationsHost } from "./fork-operations.ts";
import { RetentionLoop } from "./prune-operations.ts";
import type { ResumeOperationsHost } from "./resume-operations.ts";
import { DEFAULT_CONTRACT_SETTINGS } from "./run-contract-sections.ts";
import { RunEventHub } from "./run-events.ts";
import type { RunLimits } from "./run-limits.ts";
import { RunWaiters } from "./run-waiters.ts";
import type { RuntimeOptions } from "./runtime-options.ts";
import { registerAgents, resolveLimits } from "./runtime-setup.ts";
import { createRuntimeWorker } from "./runtime-worker.ts";
import type { StartOperationsHost } from "./start-operations.ts";
import { RUNTIME_VERSION } from "./version.ts";
import type { WaitOperationsHost } from "./wait-operations.ts";

/** A listener of `onTransition`. */
export type TransitionListener = (transition: TransitionRecord, run: RunRecord) => void;

/**
 * The machinery behind the `Runtime` façade (as Temporal keeps `internals.ts` behind
 * `workflow.ts`): the options resolved, the agents, the worker and its wiring, the lifecycle
 * (start, shutdown, the backend's wake-ups), the transitions told to listeners, event streams
 * and waiters, and the hosts the client operations (`*-operations.ts`) run against.
 */
export class RuntimeInternals {
  readonly options: RuntimeOptions;
  readonly backend: RuntimeBackend;
  /** The time workflows see. */
  readonly clock: Clock;
  readonly logger: Logger;
  readonly limits: RunLimits;
  readonly agents: Map<string, AgentDefinition>;
  readonly worker: Worker | undefined;
  /** Stops what must stop before the worker (the schedule ticker), on every shutdown path. */
  beforeShutdown: (() => Promise<void>) | undefined;
  /** The live event stream of the runs this process executes. */
  readonly events: RunEventHub;
  /** `name@version,…` of the policies, recorded on every transition. */
  readonly #policyVersions: string | null;
  /** The runtime's models as `name=model,…` (the default context version), or null. */
  readonly #modelContext: string | null;
  /** The MCP servers of `options.mcp`, connected on first use. */
  readonly #mcp: McpClients | undefined;
  readonly #listeners = new Set<TransitionListener>();
  readonly #waiters = new RunWaiters();
  #started: Promise<void> | undefined;
  #closed = false;
  /** Removes this runtime from the backlog gauge (`watchBacklog`). */
  #unwatchBacklog: () => void = () => {};
  #subscription: Promise<(() => Promise<void>) | undefined> | undefined;
  #backendClosed = false;
  #signalHandler: ((signal: NodeJS.Signals) => void) | undefined;
  /** The worker's background prune (`options.retention`). */
  readonly #retention: RetentionLoop | undefined;

  constructor(options: RuntimeOptions) {
    if (!options || !Array.isArray(options.agents)) {
      throw new InvalidDefinitionError("new Runtime({ agents: [...] }) needs the list of agents it runs");
    }
    this.options = options;
    this.logger = toLogger(options.logger ?? consoleLogger);
    this.limits = resolveLimits(options);
    const policies = Object.freeze([...(options.policies ?? [])]);
    validatePolicies(policies);
    this.#policyVersions = policyVersions(policies);
    const models = Object.entries(options.models ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
    this.#modelContext = models.length ? models.map(([name, model]) => `${name}=${model.name}`).join(",") : null;
    const prices = priceTable(options.prices);
    this.backend = options.backend ?? new InMemoryBackend();
    this.clock = options.clock ?? systemClock;
    this.events = new RunEventHub(() => this.clock.now());
    const mcp = options.mcp ?? {};
    this.#mcp =
      Object.keys(mcp).length > 0
        ? new McpClients(mcp, { log: (level, message, fields) => this.logger[level](fields ?? {}, message) })
        : undefined;
    this.agents = registerAgents(options.agents);
    const rateLimits = declaredRateLimits(options, this.agents, this.backend);
    if (options.worker !== false) {
      this.worker = createRuntimeWorker(
        {
          options,
          backend: this.backend,
          logger: this.logger,
          clock: this.clock,
          agents: this.agents,
          limits: this.limits,
          policies,
          prices,
          mcp: this.#mcp,
          events: this.events,
          versions: (agent) => this.versions(agent),
          onTransition: (t, run) => this.emit(t, run),
          rateLimits,
        },
        options.worker ?? {},
      );
    }
    const { retention } = options;
    this.#retention = retention && this.worker && new RetentionLoop(retention, this.backend, this.clock, this.logger);
  }

  /**
   * Opens the backend and starts the worker; with `handleSignals`, SIGTERM and SIGINT shut the
   * runtime down (`shutdown`, then exit).
   */
  start(handleSignals: boolean): Promise<void> {
    this.#started ??= (async () => {
      await this.backend.init();
      this.#unwatchBacklog = watchBacklog(this.backend);
      // A runtime with a worker listens from the start; a client-only one when it first waits.
      if (this.worker) await this.#subscribe();
      this.worker?.start();
      this.#retention?.start();
      if (handleSignals) {
        const handler = (signal: NodeJS.Signals) => {
          void this.shutdown({ reason: `${signal} received` }).finally(() =>
            process.exit(128 + (signal === "SIGINT" ? 2 : 15)),
          );
        };
        this.#signalHandler = handler;
        process.once("SIGTERM", handler);
        process.once("SIGINT", handler);
      }
    })();
    return this.#started;
  }

  /** Before a run is started or resumed: refused once shutdown has begun. */
  async ready(): Promise<void> {
    if (this.#closed) throw new RuntimeClosedError("the runtime is shutting down; create a new Runtime to start runs");
    await this.start(false);
  }

  /** Before a read: allowed while shutting down, until the backend is closed. */
  async readable(): Promise<void> {
    if (this.#backendClosed) throw new RuntimeClosedError("the runtime is shut down; create a new Runtime");
    if (!this.#closed) await this.start(false);
  }

  /** See `Runtime.shutdown`. */
  async shutdown(options: { graceMs?: number; reason?: string }): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.beforeShutdown?.().catch(() => {});
    if (this.#signalHandler) {
      process.off("SIGTERM", this.#signalHandler);
      process.off("SIGINT", this.#signalHandler);
    }
    if (this.#started) {
      await this.#started.catch(() => {});
      await this.#retention?.stop();
      await this.worker?.shutdown(
        options.graceMs ?? this.options.shutdownGraceMs ?? 10_000,
        options.reason ?? "shutdown",
      );
      const unsubscribe = await this.#subscription?.catch(() => undefined);
      await unsubscribe?.().catch(() => {});
      this.#backendClosed = true;
      this.#unwatchBacklog();
      await this.backend.close();
    }
    this.events.closeAll();
    await this.#mcp
      ?.close()
      .catch((error: unknown) => this.logger.warn({ error: String(error) }, "closing the MCP servers failed"));
  }

  /** The run as stored; throws `RunNotFoundError` when there is none. */
  async getRun(runId: string): Promise<RunRecord> {
    checkId(runId);
    await this.readable();
    const run = await this.backend.getRun(runId);
    if (!run) throw new RunNotFoundError(`no run with id "${runId}"; list runs with \`cairn runs\``);
    return run;
  }

  /** The run's live events (`runtime.events`): read until it settles, also in another process. */
  readEvents(runId: string, options: RunEventsOptions): AsyncIterable<RunEvent> {
    return this.events.read(runId, { ...options, checkMs: 1000 }, async () => {
      const run = await this.backend.getRun(runId);
      return run !== undefined && this.ended(run);
    });
  }

  /** See `Runtime.waitFor`. */
  async waitFor(
    runId: string,
    options: { timeoutMs?: number; pollIntervalMs?: number; maxAutoRecoveries?: number },
  ): Promise<RunRecord> {
    const deadline = options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
    const poll = options.pollIntervalMs ?? 250;
    // Waiting across processes: a backend's wake-ups end the wait as soon as the run ends.
    await this.readable();
    await this.#subscribe().catch((error: unknown) =>
      this.logger.warn({ error: String(error) }, "wake-ups unavailable; waiting by polling"),
    );
    for (;;) {
      // Storage that is down for a while (a database restart) is waited out like a slow run.
      const run = await this.getRun(runId).catch((error: unknown) => {
        if (!(error instanceof StorageError) || Date.now() >= deadline) throw error;
        this.logger.warn(
          { runId, error: error.message },
          `waiting for run ${runId}: storage unavailable, trying again`,
        );
        return undefined;
      });
      if (run && this.ended(run, options.maxAutoRecoveries)) return run;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new WaitTimeoutError(`run ${runId} is still ${run?.state ?? "unknown"} after ${options.timeoutMs} ms`);
      }
      // Woken with the run when this runtime records its terminal transition: returned as is, so a
      // run interrupted by this runtime's own shutdown is reported even though it is now closed. A
      // run that recovery takes up again (by this waiter's bound) is waited on.
      const ended = await this.#waiters.next(runId, Math.min(poll, left));
      if (ended && this.ended(ended, options.maxAutoRecoveries)) return ended;
    }
  }

  /** Calls `listener` for every transition made by this runtime. Returns an unsubscribe function. */
  onTransition(listener: TransitionListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** A transition this runtime made: told to the event streams, the listeners and the waiters. */
  emit(transition: TransitionRecord, run: RunRecord): void {
    runTransition(transition, run);
    const ended = this.ended(run);
    this.events.transition(transition, ended);
    for (const listener of this.#listeners) {
      try {
        listener(transition, run);
      } catch (error) {
        this.logger.warn({ runId: transition.runId, error: String(error) }, "transition listener threw");
      }
    }
    this.#waiters.transition(run);
  }

  /**
   * Whether the run has an outcome to report: it settled, and it is not an INTERRUPTED run that
   * automatic recovery takes up again — unless this runtime is shutting down, and so will not.
   */
  ended(run: RunRecord, maxAutoRecoveries?: number): boolean {
    if (this.#closed) return isSettled(run.state);
    const bound =
      maxAutoRecoveries ??
      (this.options.worker === false ? undefined : this.options.worker?.maxAutoRecoveries) ??
      DEFAULT_MAX_AUTO_RECOVERIES;
    return hasOutcome(run, bound);
  }

  /** The agent named `name`; throws `UnknownNameError` naming those registered. */
  agent(name: string): AgentDefinition {
    const agent = this.agents.get(name);
    if (!agent) {
      throw new UnknownNameError(
        "UNKNOWN_AGENT",
        `unknown agent "${name}" (registered: ${[...this.agents.keys()].join(", ") || "none"})`,
      );
    }
    return agent;
  }

  /** The versions a run of `agentName` runs under now. */
  versions(agentName: string): Versions {
    return {
      workflow: this.agents.get(agentName)?.version ?? "unknown",
      policy: this.#policyVersions,
      runtime: RUNTIME_VERSION,
      authority: this.options.versions?.authority ?? null,
      sandbox: this.options.versions?.sandbox ?? null,
      context: this.options.versions?.context ?? this.#modelContext,
    };
  }

  /** Subscribes to the backend's wake-ups once (if it has them). */
  #subscribe(): Promise<(() => Promise<void>) | undefined> {
    // Once shutdown has begun, no new connection: it would outlive the runtime.
    if (this.#closed && !this.#subscription) return Promise.resolve(undefined);
    this.#subscription ??= this.backend.subscribe
      ? this.backend.subscribe((wake) => this.#onWake(wake))
      : Promise.resolve(undefined);
    return this.#subscription;
  }

  /** A wake-up from the backend: work for the worker, or a run that ended in another process. */
  #onWake(wake: Wake): void {
    if (wake.kind === "stop") {
      this.worker?.noticeStop(wake.runId);
      return;
    }
    if (wake.kind !== "ended") this.worker?.poke();
    // Woken without a run: each waiter reads the run again.
    this.#waiters.wake(wake.kind === "reconnected" ? undefined : wake.runId);
  }

  // ── The hosts of the client operations ──────────────────────────────────────────────────────

  /** What `start-operations.ts` runs against. */
  startOps(): StartOperationsHost {
    return {
      backend: this.backend,
      maxPayloadBytes: this.limits.maxPayloadBytes,
      versions: (agent) => this.versions(agent),
      emit: (transition, run) => this.emit(transition, run),
      worker: this.worker,
    };
  }

  /** What `resume-operations.ts` runs against. */
  resumeOps(): ResumeOperationsHost {
    return {
      backend: this.backend,
      getRun: (id) => this.getRun(id),
      versions: (agent) => this.versions(agent),
      emit: (transition, run) => this.emit(transition, run),
      worker: this.worker,
    };
  }

  /** What `wait-operations.ts` and `effect-operations.ts` run against. */
  waitOps(): WaitOperationsHost {
    return {
      backend: this.backend,
      // A client without the agent's code records the versions the run started with.
      versions: (run) => (this.agents.has(run.agent) ? this.versions(run.agent) : run.versions),
      now: () => this.clock.now(),
      maxPayloadBytes: this.limits.maxPayloadBytes,
      maxUnreadSignals: this.limits.maxUnreadSignals,
      getRun: (id) => this.getRun(id),
      emit: (transitions, run) => {
        for (const t of transitions) if (t.runId === run.id) this.emit(t, run);
      },
    };
  }

  /** What `fork-operations.ts` runs against. */
  forkOps(): ForkOperationsHost {
    return {
      backend: this.backend,
      getRun: (id) => this.getRun(id),
      agent: (name) => this.agents.get(name),
      versions: (run) => (this.agents.has(run.agent) ? this.versions(run.agent) : run.versions),
      maxPayloadBytes: this.limits.maxPayloadBytes,
      now: () => this.clock.now(),
      emit: (transition, run) => this.emit(transition, run),
      worker: this.worker,
    };
  }

  /** What `contract-operations.ts` runs against. */
  contractOps(): ContractOperationsHost {
    return {
      backend: this.backend,
      now: () => this.clock.now(),
      getRun: (id) => this.getRun(id),
      agent: (name) => this.agents.get(name),
      settings: () => {
        const worker = this.options.worker || {};
        return {
          cancelGraceMs: worker.cancelGraceMs ?? DEFAULT_CONTRACT_SETTINGS.cancelGraceMs,
          maxAutoRecoveries: worker.maxAutoRecoveries ?? DEFAULT_CONTRACT_SETTINGS.maxAutoRecoveries,
          leaseMs: worker.leaseMs ?? DEFAULT_CONTRACT_SETTINGS.leaseMs,
          retryPauseThresholdMs: this.options.retryPauseThresholdMs ?? DEFAULT_CONTRACT_SETTINGS.retryPauseThresholdMs,
          modelTimeoutMs: this.options.modelTimeoutMs ?? null,
          retention: this.options.retention,
        };
      },
    };
  }
}
