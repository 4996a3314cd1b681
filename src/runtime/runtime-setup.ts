import { toAgentDefinition } from "../agent/decorators.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
import { InvalidDefinitionError } from "../core/errors.ts";
import { DEFAULT_MAX_PAYLOAD_BYTES } from "../core/serialize.ts";
import { historyLimits, type RunLimits } from "./run-limits.ts";
import type { RuntimeOptions } from "./runtime-options.ts";

/** The runtime's limits from its options, checked (`maxSteps`, `maxPayloadBytes`, history bounds). */
export function resolveLimits(options: RuntimeOptions): RunLimits {
  const maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  if (!(Number.isSafeInteger(maxPayloadBytes) && maxPayloadBytes >= 1)) {
    throw new InvalidDefinitionError(
      `maxPayloadBytes must be a whole number of bytes, at least 1 (got ${String(options.maxPayloadBytes)})`,
    );
  }
  return { maxSteps: options.maxSteps ?? 10_000, maxPayloadBytes, ...historyLimits(options) };
}

/** The runtime's agents by name; two agents of one name are refused. */
export function registerAgents(agents: RuntimeOptions["agents"]): Map<string, AgentDefinition> {
  const byName = new Map<string, AgentDefinition>();
  for (const item of agents) {
    const agent = toAgentDefinition(item);
    if (byName.has(agent.name)) {
      throw new InvalidDefinitionError(`two agents are named "${agent.name}"; agent names must be unique in a runtime`);
    }
    byName.set(agent.name, agent);
  }
  return byName;
}
