import type { RateLimitStore, RuntimeBackend } from "../backend/backend.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
import { InvalidDefinitionError } from "../core/errors.ts";
import type { ModelProvider } from "../core/model-provider.ts";
import {
  checkNamedRateLimits,
  type RateLimitDeclaration,
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

/** The limits of a runtime's step sources, keyed by {@link sourceKey}. */
type SourceLimits = ReadonlyMap<string, ResolvedRateLimit>;

/** The key of a step source's limit: a tool (agent, tool), a model key, a domain or an MCP server. */
const sourceKey = {
  tool: (agent: string, tool: string) => `tool\0${agent}\0${tool}`,
  model: (key: string) => `model\0${key}`,
  domain: (domain: string) => `domain\0${domain}`,
  mcp: (server: string) => `mcp\0${server}`,
};

/**
 * The rate limits a runtime's steps are under (DESIGN §4 *Rate limits*), resolved once when the
 * runtime is made: the runtime's named `rateLimits`, each tool's `rateLimit`, each model's, each
 * domain's (`domainRateLimits`) and each MCP server's. The slots come from the backend's
 * `rateLimits` role, so every worker on the backend shares them.
 */
export class DeclaredRateLimits implements StepRateLimits {
  readonly #backend: RuntimeBackend;
  readonly #limits: SourceLimits;
  readonly #defaultModel: string | undefined;

  constructor(backend: RuntimeBackend, limits: SourceLimits, defaultModel: string | undefined) {
    this.#backend = backend;
    this.#limits = limits;
    this.#defaultModel = defaultModel;
  }

  ofTool(agent: string, tool: string): ResolvedRateLimit | undefined {
    return this.#limits.get(sourceKey.tool(agent, tool));
  }

  ofModel(model: string | undefined): ResolvedRateLimit | undefined {
    const key = model ?? this.#defaultModel;
    return key === undefined ? undefined : this.#limits.get(sourceKey.model(key));
  }

  ofDomain(domain: string): ResolvedRateLimit | undefined {
    return this.#limits.get(sourceKey.domain(domain));
  }

  ofMcp(server: string): ResolvedRateLimit | undefined {
    return this.#limits.get(sourceKey.mcp(server));
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
  const limits = new Map<string, ResolvedRateLimit>();
  const add = (key: string, declared: RateLimitDeclaration | undefined, owner: string, ownName: string) => {
    const limit = resolveRateLimit(declared, owner, ownName, named);
    if (limit) limits.set(key, limit);
  };
  for (const agent of agents.values()) {
    for (const [name, tool] of Object.entries(agent.tools)) {
      add(
        sourceKey.tool(agent.name, name),
        tool.rateLimit,
        `tool "${name}" of agent "${agent.name}"`,
        `tool:${agent.name}.${name}`,
      );
    }
  }
  const providers = options.models ?? {};
  for (const [key, provider] of Object.entries(providers)) {
    add(
      sourceKey.model(key),
      provider?.rateLimit,
      `model "${key}" (${provider?.name})`,
      `model:${provider?.name ?? key}`,
    );
  }
  for (const [domain, declared] of Object.entries(options.domainRateLimits ?? {})) {
    if (!Object.hasOwn(options.domains ?? {}, domain)) {
      const known = Object.keys(options.domains ?? {}).join(", ") || "none";
      throw new InvalidDefinitionError(
        `domainRateLimits names domain ${JSON.stringify(domain)}, which the runtime does not have (its domains: ${known}); register it in new Runtime({ domains: { ${JSON.stringify(domain)}: ... } }) or remove the limit`,
      );
    }
    add(sourceKey.domain(domain), declared, `domain "${domain}"`, `domain:${domain}`);
  }
  for (const [server, config] of Object.entries(options.mcp ?? {})) {
    add(sourceKey.mcp(server), config?.rateLimit, `MCP server "${server}"`, `mcp:${server}`);
  }
  if (named.size === 0 && limits.size === 0) return undefined;
  if (!("rateLimits" in backend)) throw noRole(backend);
  return new DeclaredRateLimits(backend, limits, defaultModelKey(providers));
}
