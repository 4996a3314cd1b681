import type { RuntimeBackend } from "../backend/backend.ts";
import { Runtime } from "../runtime/runtime.ts";
import type { AgentModule } from "./load-module.ts";

/**
 * A runtime for one CLI process. With `worker`, it drives runs; automatic recovery is off, so a
 * `cairn run` or `cairn resume` drives the run it was asked about and does not take over other
 * INTERRUPTED runs in the same database (that is what `cairn resume` is for).
 */
export function cliRuntime(module: AgentModule | undefined, backend: RuntimeBackend, worker: boolean): Runtime {
  const { domains, models, domainRetry, modelRetry } = module?.config ?? {};
  return new Runtime({
    agents: module ? [...module.agents.values()] : [],
    backend,
    ...(domains && { domains }),
    ...(models && { models }),
    ...(domainRetry && { domainRetry }),
    ...(modelRetry && { modelRetry }),
    worker: worker ? { maxAutoRecoveries: 0 } : false,
  });
}
