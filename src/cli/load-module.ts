import { existsSync, statSync } from "node:fs";
import { relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { isAgentLike, toAgentDefinition } from "../agent/decorators.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
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
 * Imports an agent module (TypeScript works when tsx is installed: the `cairn` bin registers it). Its agents are the
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
    throw new CliError(`module "${path}" could not be loaded: ${loadFailure(cause, file)}`, { cause });
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

/**
 * Why a module failed to load. A TypeScript module that Node cannot load by itself needs tsx, an
 * optional peer dependency of cairn that the `cairn` bin registers when it is installed.
 */
function loadFailure(cause: unknown, file: string): string {
  const message = (cause as Error)?.message ?? String(cause);
  const code = (cause as { code?: unknown } | null)?.code;
  const typescript = /\.[cm]?tsx?$/.test(file);
  if (typescript && (code === "ERR_UNKNOWN_FILE_EXTENSION" || code === "ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX")) {
    return `${message}; to run TypeScript modules the cairn CLI needs tsx: run \`npm install -D tsx\` in your app`;
  }
  return message;
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
  for (const key of ["domains", "models", "mcp", "rateLimits", "domainRateLimits"] as const) {
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

/**
 * The agents and runtime options of several modules as one (`cairn worker a.ts b.ts`). An agent,
 * domain or model name defined differently by two modules is an error: the runtime has one of
 * each by name, and an agent must not end up calling another module's model.
 */
export function mergeAgentModules(modules: readonly AgentModule[]): Pick<AgentModule, "agents" | "config"> {
  const agents = new Map<string, AgentDefinition>();
  const agentFrom = new Map<string, string>();
  for (const module of modules) {
    for (const [name, agent] of module.agents) {
      const seen = agents.get(name);
      if (seen && seen !== agent) {
        throw new CliError(
          `agent "${name}" is defined by both ${agentFrom.get(name)} and ${module.path}; agent names must be unique across the modules of a worker`,
        );
      }
      agents.set(name, agent);
      agentFrom.set(name, module.path);
    }
  }
  const config: CairnConfig = {};
  for (const key of ["domains", "models", "mcp", "rateLimits", "domainRateLimits"] as const) {
    const merged: Record<string, unknown> = {};
    const from = new Map<string, string>();
    for (const module of modules) {
      for (const [name, value] of Object.entries(module.config[key] ?? {})) {
        if (Object.hasOwn(merged, name) && merged[name] !== value && !sameLimit(key, merged[name], value)) {
          throw new CliError(
            `${NOUN[key]} "${name}" is defined differently by ${from.get(name)} and ${module.path} (runtimeOptions.${key}); a worker has one ${NOUN[key]} per name: give them different names or define it in one shared module`,
          );
        }
        merged[name] = value;
        from.set(name, module.path);
      }
    }
    if (from.size > 0) (config as Record<string, unknown>)[key] = merged;
  }
  for (const key of [
    "domainRetry",
    "modelRetry",
    "modelTimeoutMs",
    "retryPauseThresholdMs",
    "maxSteps",
    "maxPayloadBytes",
    "maxHistoryBytes",
    "maxHistoryEvents",
    "maxUnreadSignals",
    "sandbox",
  ] as const) {
    let chosen: { value: NonNullable<CairnConfig[typeof key]>; path: string } | undefined;
    for (const module of modules) {
      const value = module.config[key];
      if (value === undefined) continue;
      if (chosen && chosen.value !== value && JSON.stringify(chosen.value) !== JSON.stringify(value)) {
        throw new CliError(
          `runtimeOptions.${key} differs between ${chosen.path} and ${module.path}; a worker has one ${key}: make them equal or set it in one module only`,
        );
      }
      chosen ??= { value, path: module.path };
    }
    if (chosen) (config as Record<string, unknown>)[key] = chosen.value;
  }
  return { agents, config };
}

/** What one entry of each named map of the runtime options is called in messages. */
const NOUN = {
  domains: "domain",
  models: "model",
  mcp: "MCP server",
  rateLimits: "rate limit",
  domainRateLimits: "domain rate limit",
} as const;

/** Two modules declare the same rate limit under one name (equal limits are one limit). */
function sameLimit(key: string, a: unknown, b: unknown): boolean {
  return (key === "rateLimits" || key === "domainRateLimits") && JSON.stringify(a) === JSON.stringify(b);
}
