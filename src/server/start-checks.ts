import type { AgentDefinition, CompensateMode } from "../core/agent-definition.ts";
import { BUDGET_KEYS, type Budget } from "../core/budget.ts";
import { UnknownNameError } from "../core/errors.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { Principal } from "./auth.ts";
import { ApiError } from "./errors.ts";

/**
 * What a start over HTTP must pass before the runtime sees it, beyond its body's schema: the agent
 * and workflow it names (looked up as own entries, so `constructor` or `toString` name nothing),
 * and the rule that per-run options only tighten what the agent's author declared unless the
 * caller is admin:
 * - `budget`: a cap the agent declares may be lowered, not raised; a cap the agent has none of
 *   may be added;
 * - `compensate`: only the agent's declared mode (its default, "never", when it declares none)
 *   may be named. Compensation runs the author's undo code: when it runs is the author's call,
 *   and neither direction is "tighter" (never compensating leaves applied effects standing,
 *   compensating on cancel undoes what the author meant to keep).
 * Anything else is refused with 403 FORBIDDEN naming the field; nothing is written.
 */

/** The agent of a start, with its workflow checked; 422 UNKNOWN_AGENT / UNKNOWN_WORKFLOW otherwise. */
export function startedAgent(runtime: Runtime, agentName: string, workflow: string): AgentDefinition {
  const agents = runtime.agents;
  const agent = agents.find((a) => a.name === agentName);
  if (!agent) {
    throw new UnknownNameError(
      "UNKNOWN_AGENT",
      `unknown agent "${agentName}" (registered: ${agents.map((a) => a.name).join(", ") || "none"})`,
    );
  }
  if (!Object.hasOwn(agent.workflows, workflow)) {
    throw new UnknownNameError(
      "UNKNOWN_WORKFLOW",
      `unknown workflow "${workflow}" in agent "${agent.name}" (known: ${Object.keys(agent.workflows).join(", ")})`,
    );
  }
  return agent;
}

/** Refuses (403) per-run options that loosen what `agent` declares, unless `principal` is admin. */
export function checkStartOptions(
  agent: AgentDefinition,
  options: {
    budget?: { readonly [K in keyof Budget]?: number | undefined } | undefined;
    compensate?: CompensateMode | undefined;
  },
  principal: Principal,
): void {
  if (principal.roles.includes("admin")) return;
  const issues: { path: string[]; message: string }[] = [];
  for (const key of BUDGET_KEYS) {
    const asked = options.budget?.[key];
    const cap = agent.budget?.[key];
    if (asked !== undefined && cap !== undefined && asked > cap) {
      issues.push({
        path: ["budget", key],
        message: `budget.${key} ${asked} is above agent "${agent.name}"'s cap of ${cap}`,
      });
    }
  }
  const declared = agent.compensate ?? "never";
  if (options.compensate !== undefined && options.compensate !== declared) {
    issues.push({
      path: ["compensate"],
      message: `compensate "${options.compensate}" is not agent "${agent.name}"'s declared mode "${declared}"`,
    });
  }
  if (issues.length === 0) return;
  throw new ApiError(
    "FORBIDDEN",
    `${issues.map((i) => i.message).join("; ")}: per-run options may only tighten what the agent declares (lower a cap, add one), unless the caller is admin (${principal.subject} has the roles ${principal.roles.join(", ")}); nothing was started`,
    { needs: ["admin"], roles: principal.roles, issues },
  );
}
