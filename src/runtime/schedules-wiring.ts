import type { AgentDefinition } from "../core/agent-definition.ts";
import type { Logger } from "../core/logger.ts";
import type { RunRecord } from "../core/records.ts";
import type { Runtime } from "./runtime.ts";
import { RuntimeSchedules } from "./runtime-schedules.ts";

/** What the wiring reads of a runtime's internals. */
export interface SchedulesInternals {
  logger: Logger;
  agents: ReadonlyMap<string, AgentDefinition>;
  worker: unknown;
  beforeShutdown: (() => Promise<void>) | undefined;
  ready(): Promise<void>;
}

/**
 * The schedules of `runtime`: its ticks start runs through `runtime.run` (so its checks and
 * defaults apply, and its worker is poked), under the actor and key the ticker gives.
 */
export function schedulesOf(runtime: Runtime, internals: SchedulesInternals): RuntimeSchedules {
  const schedules = new RuntimeSchedules(
    {
      backend: runtime.backend,
      clock: runtime.clock,
      logger: internals.logger,
      // Any use of the schedules starts the ticker of a runtime with a worker (as `start()` does).
      ready: async () => {
        await internals.ready();
        schedules.startTicking();
      },
      hasAgent: (agent) => internals.agents.has(agent),
      start: async (record, options) => {
        const handle = await runtime.run(record.agent, record.workflow, record.input, options);
        return { runId: handle.id, created: handle.created };
      },
      runState: async (runId) => ((await runtime.backend.getRun(runId)) as RunRecord | undefined)?.state,
      cancel: async (runId, reason) => {
        await runtime.cancel(runId, { by: { kind: "system", id: "schedule" }, reason }).catch(() => {});
      },
    },
    internals.worker !== undefined,
  );
  internals.beforeShutdown = () => schedules.stopTicking();
  return schedules;
}
