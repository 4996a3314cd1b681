import { join, resolve } from "node:path";
import type { RuntimeBackend } from "../backend/backend.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
import type { Clock } from "../core/clock.ts";
import type { SandboxPlace } from "../core/envelope/sandbox-slot.ts";
import type { Logger } from "../core/logger.ts";
import type { McpTools } from "../core/mcp-tools.ts";
import type { Policy } from "../core/policies.ts";
import type { PriceTable } from "../core/prices.ts";
import type { RunRecord, TransitionRecord, Versions } from "../core/records.ts";
import type { RuntimeSandboxOptions } from "../core/sandbox-handle.ts";
import { Worker } from "../worker/worker.ts";
import type { WorkerOptions } from "../worker/worker-options.ts";
import { type DeclaredRateLimits, defaultModelKey } from "./declared-rate-limits.ts";
import type { RunEventHub } from "./run-events.ts";
import { newRunId } from "./run-id.ts";
import type { RunLimits } from "./run-limits.ts";
import { createEnvelopeHost } from "./runtime-host.ts";
import type { RuntimeOptions } from "./runtime-options.ts";
import { secretResolver } from "./secrets.ts";

/** The runtime's sandbox option with its log folder made absolute (default `.cairn/sandbox-logs`). */
export function sandboxPlace(options: RuntimeSandboxOptions | undefined): SandboxPlace | undefined {
  if (!options) return undefined;
  return { provider: options.provider, logDir: resolve(options.logDir ?? join(".cairn", "sandbox-logs")) };
}

/** What a runtime's worker is built from: the runtime's options and the parts it made of them. */
export interface RuntimeWorkerParts {
  options: RuntimeOptions;
  backend: RuntimeBackend;
  logger: Logger;
  clock: Clock;
  agents: ReadonlyMap<string, AgentDefinition>;
  limits: RunLimits;
  policies: readonly Policy[];
  prices: PriceTable;
  mcp: McpTools | undefined;
  /** The live event streams its runs' events go to. */
  events: RunEventHub;
  /** The versions a run of `agent` runs under now. */
  versions(agent: string): Versions;
  /** Tells listeners and waiters about a transition the worker made. */
  onTransition(transition: TransitionRecord, run: RunRecord): void;
  /** The declared rate limits of steps, if any. */
  rateLimits?: DeclaredRateLimits | undefined;
}

/**
 * The in-process worker of a runtime, with the envelope host each run it drives gets: the
 * runtime's store, clock, limits, providers, policies, prices, secrets and event streams, and the
 * worker's lease check.
 */
export function createRuntimeWorker(parts: RuntimeWorkerParts, workerOptions: WorkerOptions): Worker {
  const { options, backend, logger, agents, limits } = parts;
  const secret = secretResolver(options.secrets);
  const sandbox = sandboxPlace(options.sandbox);
  const worker: Worker = new Worker(
    {
      backend,
      logger,
      agent: (name) => agents.get(name),
      agentNames: [...agents.keys()],
      host: (run, _envelope, holdLease) => {
        const models = options.models ?? {};
        return createEnvelopeHost({
          holdLease,
          run,
          backend,
          clock: parts.clock,
          retryPauseThresholdMs: options.retryPauseThresholdMs ?? 5000,
          maxSteps: options.maxSteps ?? 10_000,
          maxPayloadBytes: limits.maxPayloadBytes,
          maxHistoryBytes: limits.maxHistoryBytes,
          maxHistoryEvents: limits.maxHistoryEvents,
          versions: (agent) => parts.versions(agent),
          onChildCreated: () => worker.poke(),
          domains: options.domains ?? {},
          models,
          defaultModel: defaultModelKey(models),
          domainRetry: options.domainRetry,
          modelRetry: options.modelRetry,
          modelTimeoutMs: options.modelTimeoutMs,
          mcp: parts.mcp,
          emit: (runId, event) => parts.events.emit(runId, event),
          logger,
          policies: parts.policies,
          prices: parts.prices,
          agentBudget: (agent) => agents.get(agent)?.budget,
          secret,
          sandbox,
          rateLimits: parts.rateLimits,
        });
      },
      versions: (agent) => parts.versions(agent),
      onTransition: (t, run) => parts.onTransition(t, run),
      clock: parts.clock,
      newRunId,
      sandbox,
    },
    workerOptions,
  );
  return worker;
}
