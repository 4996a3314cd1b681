import type { RateLimitStore, RuntimeBackend } from "../backend/backend.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
import { InvalidDefinitionError } from "../core/errors.ts";
import type { ModelProvider } from "../core/model-provider.ts";
import {
  checkNamedRateLimits,
  type ResolvedRateLimit,
  resolveRateLimit,
  type StepRateLimits,
} from "../core/rate-limits.ts";
import type { RuntimeOptions } from "./runtime-options.ts";

/** The key of the model a call that names none uses: `default`, or the only one. */
export function defaultModelKey(models: Readonly<Record<string, ModelProvider>>): string | undefined {
  const names = Object.keys(models);
  return "default" in models ? "default" : names.length === 1 ? names[0] : undefined;
}

/**
 * The rate limits a runtime's steps are under (DESIGN §4 *Rate limits*), resolved once when the
 * runtime is made: the runtime's named `rateLimits`, each tool's `rateLimit` and each model's. The
 * slots come from the backend's `rateLimits` role, so every worker on the backend shares them.
 */
export class DeclaredRateLimits implements StepRateLimits {
  readonly #backend: RuntimeBackend;
  /** By `<agent>\0<tool>`. */
  readonly #tools: ReadonlyMap<string, ResolvedRateLimit>;
  /** By model key. */
  readonly #models: ReadonlyMap<string, ResolvedRateLimit>;
  readonly #defaultModel: string | undefined;

  constructor(
    backend: RuntimeBackend,
    tools: ReadonlyMap<string, ResolvedRateLimit>,
    models: ReadonlyMap<string, ResolvedRateLimit>,
    defaultModel: string | undefined,
  ) {
    this.#backend = backend;
    this.#tools = tools;
    this.#models = models;
    this.#defaultModel = defaultModel;
  }

  ofTool(agent: string, tool: string): ResolvedRateLimit | undefined {
    return this.#tools.get(`${agent}\0${tool}`);
  }

  ofModel(model: string | undefined): ResolvedRateLimit | undefined {
    const key = model ?? this.#defaultModel;
    return key === undefined ? undefined : this.#models.get(key);
  }

  take(limit: ResolvedRateLimit, now: number): Promise<number> {
    return this.#store().takeRateSlot(limit.name, limit.periodMs / limit.limit, now);
  }

  hold(limit: ResolvedRateLimit, until: number, now: number): Promise<void> {
    return this.#store().holdRateLimit(limit.name, until, now);
  }

  #store(): RateLimitStore {
    const store = this.#backend.rateLimits;
    if (!store) throw noRole(this.#backend);
    return store;
  }
}

function noRole(backend: RuntimeBackend): InvalidDefinitionError {
  return new InvalidDefinitionError(
    `the ${backend.name} backend cannot share rate limits (it has no \`rateLimits\` role), but the runtime declares some; use the memory, SQLite or PostgreSQL backend, or remove the rate limits`,
  );
}

/**
 * The declared rate limits of a runtime made with `options` and `agents`, checked; undefined when
 * nothing declares one. Throws `InvalidDefinitionError` naming the tool, model or limit, the
 * problem and the fix: a name the runtime does not declare, a limit of 0, a bad period, a backend
 * without the `rateLimits` role.
 */
export function declaredRateLimits(
  options: RuntimeOptions,
  agents: ReadonlyMap<string, AgentDefinition>,
  backend: RuntimeBackend,
): DeclaredRateLimits | undefined {
  const named = checkNamedRateLimits(options.rateLimits);
  const tools = new Map<string, ResolvedRateLimit>();
  for (const agent of agents.values()) {
    for (const [name, tool] of Object.entries(agent.tools)) {
      const owner = `tool "${name}" of agent "${agent.name}"`;
      const limit = resolveRateLimit(tool.rateLimit, owner, `tool:${agent.name}.${name}`, named);
      if (limit) tools.set(`${agent.name}\0${name}`, limit);
    }
  }
  const models = new Map<string, ResolvedRateLimit>();
  const providers = options.models ?? {};
  for (const [key, provider] of Object.entries(providers)) {
    const owner = `model "${key}" (${provider?.name})`;
    const limit = resolveRateLimit(provider?.rateLimit, owner, `model:${provider?.name ?? key}`, named);
    if (limit) models.set(key, limit);
  }
  if (named.size === 0 && tools.size === 0 && models.size === 0) return undefined;
  if (!("rateLimits" in backend)) throw noRole(backend);
  return new DeclaredRateLimits(backend, tools, models, defaultModelKey(providers));
}
