import type { RuntimeOptions } from "../runtime/runtime.ts";

/**
 * What an agent module gives the `cairn` CLI besides its agents: the domain providers and models
 * its workflows call. Export it as `runtimeOptions` (or as the default export); the agents are
 * the module's named exports made with `defineAgent` or `@agent`.
 */
export interface CairnConfig {
  /** Domain providers `ctx.domain(domain, …)` reads from, by domain name. @default {} */
  domains?: NonNullable<RuntimeOptions["domains"]>;
  /** Models `ctx.llm` calls, by name; `default` is used when a call names none. @default {} */
  models?: NonNullable<RuntimeOptions["models"]>;
  /**
   * Named rate limits shared by every worker, which tools, models and MCP servers name in their
   * `rateLimit` (see `RuntimeOptions.rateLimits`). @default {}
   */
  rateLimits?: NonNullable<RuntimeOptions["rateLimits"]>;
  /** The rate limit of each domain's reads, by domain (see `RuntimeOptions.domainRateLimits`). @default {} */
  domainRateLimits?: NonNullable<RuntimeOptions["domainRateLimits"]>;
  /** MCP servers whose tools `ctx.agentLoop({ mcp: [name] })` offers, by name. @default {} */
  mcp?: NonNullable<RuntimeOptions["mcp"]>;
  /** Per-attempt timeout of model calls that set none. @default the provider's (5 minutes for real models) */
  modelTimeoutMs?: number;
  /** Retry policy of `ctx.domain` steps. @default the tool defaults */
  domainRetry?: NonNullable<RuntimeOptions["domainRetry"]>;
  /** Retry policy of `ctx.llm` steps. @default the tool defaults */
  modelRetry?: NonNullable<RuntimeOptions["modelRetry"]>;
  /** Retry backoffs at least this long pause the run (awaiting_retry). @default 5000 */
  retryPauseThresholdMs?: number;
  /** Steps a run may take. @default 10000 */
  maxSteps?: number;
  /** Bytes of JSON one stored payload may take. @default 16 MiB */
  maxPayloadBytes?: number;
  /** Bytes of JSON one run's history may hold. @default 50 MiB */
  maxHistoryBytes?: number;
  /** Events (steps, retried attempts, transitions) one run's history may hold. @default 50000 */
  maxHistoryEvents?: number;
  /** Signals a run's inbox may hold unread. @default 1000 */
  maxUnreadSignals?: number;
  /** Where `ctx.sandbox` makes sandboxes: a provider of `cairn/sandbox`, and a log folder. @default none */
  sandbox?: NonNullable<RuntimeOptions["sandbox"]>;
}

/**
 * Types the runtime options of an agent module for `cairn run` and `cairn resume`. It returns
 * its argument unchanged; the point is the type check.
 *
 * @example
 * export const runtimeOptions = defineConfig({
 *   domains: { finance: { quarterly: async ({ quarter }) => loadFigures(quarter) } },
 *   models: { default: new ScriptedModel() },
 * });
 */
export function defineConfig(config: CairnConfig): CairnConfig {
  return config;
}
