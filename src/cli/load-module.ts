import { existsSync, statSync } from "node:fs";
import { relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { AgentDefinition } from "../agent/agent.ts";
import { isAgentLike, toAgentDefinition } from "../agent/decorators.ts";
import { CliError } from "./cli-error.ts";
import type { CairnConfig } from "./config.ts";

/** What `cairn run` and `cairn resume` take from an agent module. */
export interface AgentModule {
  /** Absolute path of the module file (stored in the run's meta so `resume` finds it). */
  file: string;
  /** The path as the user gave it (for messages). */
  path: string;
  /** The agents among its exports, by agent name. */
  agents: Map<string, AgentDefinition>;
  /** Its `runtimeOptions` export (or default export object), or `{}`. */
  config: CairnConfig;
}

/**
 * Imports an agent module (TypeScript works: the `cairn` bin registers tsx). Its agents are the
 * exports for which `isAgentLike` holds; its config is the `runtimeOptions` export, else a
 * default export that is a plain object and not an agent.
 */
export async function loadAgentModule(path: string, cwd = process.cwd()): Promise<AgentModule> {
  const file = resolve(cwd, path);
  if (!existsSync(file) || !statSync(file).isFile()) {
    throw new CliError(
      `module "${path}" not found (looked for ${file}); pass the path of a .ts or .js file relative to ${cwd}, e.g. examples/report-builder.ts`,
    );
  }
  let exports: Record<string, unknown>;
  try {
    exports = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (cause) {
    throw new CliError(`module "${path}" could not be loaded: ${(cause as Error)?.message ?? String(cause)}`, {
      cause,
    });
  }
  const agents = new Map<string, AgentDefinition>();
  for (const [exportName, value] of Object.entries(exports)) {
    if (!isAgentLike(value)) continue;
    const agent = toAgentDefinition(value);
    const seen = agents.get(agent.name);
    if (seen && seen !== agent) {
      throw new CliError(
        `module "${path}" exports two different agents named "${agent.name}" (one of them as "${exportName}"); agent names must be unique`,
      );
    }
    agents.set(agent.name, agent);
  }
  if (agents.size === 0) {
    throw new CliError(
      `module "${relative(cwd, file) || file}" exports no agents; export one made with defineAgent(...) or an @agent class, e.g. \`export const reportBuilder = defineAgent({ ... })\``,
    );
  }
  return { file, path, agents, config: findConfig(exports, path) };
}

function findConfig(exports: Record<string, unknown>, path: string): CairnConfig {
  const candidate = exports.runtimeOptions ?? (isAgentLike(exports.default) ? undefined : exports.default);
  if (candidate === undefined) return {};
  if (!candidate || typeof candidate !== "object" || Array.isArray(candidate)) {
    throw new CliError(
      `module "${path}": runtimeOptions must be an object like defineConfig({ domains, models }) (got ${candidate === null ? "null" : typeof candidate})`,
    );
  }
  const config = candidate as CairnConfig;
  for (const key of ["domains", "models"] as const) {
    const value = config[key];
    if (value !== undefined && (typeof value !== "object" || value === null)) {
      throw new CliError(`module "${path}": runtimeOptions.${key} must be an object keyed by name`);
    }
  }
  return config;
}

/** The agent named `name`, or an error listing the known ones. */
export function pickAgent(module: AgentModule, name: string): AgentDefinition {
  const agent = module.agents.get(name);
  if (agent) return agent;
  throw new CliError(`unknown agent "${name}" in ${module.path} (known: ${[...module.agents.keys()].join(", ")})`);
}

/** Checks that `agent` has workflow `workflow`, else an error listing its workflows. */
export function checkWorkflow(agent: AgentDefinition, workflow: string): void {
  if (Object.hasOwn(agent.workflows, workflow)) return;
  throw new CliError(
    `unknown workflow "${workflow}" in agent "${agent.name}" (known: ${Object.keys(agent.workflows).join(", ")})`,
  );
}
