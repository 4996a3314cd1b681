import type { RuntimeBackend } from "../backend/backend.ts";
import type { Logger } from "../core/logger.ts";
import type { RunRecord } from "../core/records.ts";
import { Runtime } from "../runtime/runtime.ts";
import type { WorkerOptions } from "../worker/worker-options.ts";
import type { AgentModule } from "./load-module.ts";

/** What a runtime of the CLI needs from the agent module(s). */
export type RuntimeModule = Pick<AgentModule, "agents" | "config">;

/**
 * How a CLI runtime works runs:
 * - `"client"`: never executes a run (`runs`, `show`, the first phase of `resume`);
 * - `"own-runs"`: drives only the runs this process starts (`cairn run`) or names in `runIds`
 *   (`cairn resume`), with automatic recovery off, so a short-lived command never takes over
 *   other runs in a shared database, nor leaves them INTERRUPTED when it exits;
 * - worker options: a full worker (`cairn worker`) that claims any run of its agents and
 *   recovers runs whose worker is gone.
 */
export type CliWorker = "client" | { ownRuns: readonly string[] } | WorkerOptions;

/** A runtime for one CLI process; `logger` from the command's log options (`cliLogger`), else the default. */
export function cliRuntime(
  module: RuntimeModule | undefined,
  backend: RuntimeBackend,
  worker: CliWorker,
  logger?: Logger,
): Runtime {
  const {
    domains,
    models,
    mcp,
    rateLimits,
    domainRateLimits,
    domainRetry,
    modelRetry,
    modelTimeoutMs,
    retryPauseThresholdMs,
    maxSteps,
    maxPayloadBytes,
    maxHistoryBytes,
    maxHistoryEvents,
    maxUnreadSignals,
    sandbox,
  } = module?.config ?? {};
  const own = typeof worker === "object" && "ownRuns" in worker ? worker.ownRuns : undefined;
  let workerOptions: WorkerOptions | false;
  if (worker === "client") workerOptions = false;
  else if ("ownRuns" in worker) workerOptions = { maxAutoRecoveries: 0 };
  else workerOptions = worker;
  return new Runtime({
    agents: module ? [...module.agents.values()] : [],
    backend: own ? ownRunsOnly(backend, own) : backend,
    ...(domains && { domains }),
    ...(models && { models }),
    ...(mcp && { mcp }),
    ...(rateLimits && { rateLimits }),
    ...(domainRateLimits && { domainRateLimits }),
    ...(modelTimeoutMs !== undefined && { modelTimeoutMs }),
    ...(domainRetry && { domainRetry }),
    ...(modelRetry && { modelRetry }),
    ...(retryPauseThresholdMs !== undefined && { retryPauseThresholdMs }),
    ...(maxSteps !== undefined && { maxSteps }),
    ...(maxPayloadBytes !== undefined && { maxPayloadBytes }),
    ...(maxHistoryBytes !== undefined && { maxHistoryBytes }),
    ...(maxHistoryEvents !== undefined && { maxHistoryEvents }),
    ...(maxUnreadSignals !== undefined && { maxUnreadSignals }),
    ...(sandbox && { sandbox }),
    worker: workerOptions,
    ...(logger && { logger }),
  });
}

/**
 * `backend`, seen by a worker that may drive only some runs: those named in `runIds` and those
 * created through it. Claims name those runs; the recovery sweep sees only those. Everything else
 * (including methods a backend adds later, such as wake-up subscriptions) goes to `backend` as is.
 */
export function ownRunsOnly(backend: RuntimeBackend, runIds: readonly string[]): RuntimeBackend {
  const own = new Set(runIds);
  const mine = (runs: RunRecord[]) => runs.filter((run) => own.has(run.id));
  const overrides: Partial<RuntimeBackend> = {
    async createRun(input) {
      const result = await backend.createRun(input);
      own.add(result.run.id);
      return result;
    },
    async claimRun(request) {
      if (request.runId !== undefined) return own.has(request.runId) ? backend.claimRun(request) : undefined;
      for (const runId of own) {
        const run = await backend.claimRun({ ...request, runId });
        if (run) return run;
      }
      return undefined;
    },
    // Batch claims take any runnable run: this worker claims its own runs one by one instead.
    claimRuns: undefined as unknown as RuntimeBackend["claimRuns"] & {},
    listExpiredLeases: async (now, limit) => mine(await backend.listExpiredLeases(now, limit)),
    listRecoverable: async (maxRecoveries, limit) => mine(await backend.listRecoverable(maxRecoveries, limit)),
  };
  return new Proxy(backend, {
    get(target, property) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof RuntimeBackend];
      const value: unknown = Reflect.get(target, property, target);
      // Bound to the backend itself: its private fields are not reachable through the proxy.
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
