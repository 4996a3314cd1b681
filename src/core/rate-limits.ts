import { InvalidDefinitionError } from "./errors.ts";
import { parseDuration } from "./retention.ts";

/**
 * Declared rate limits (DESIGN §4 *Rate limits*): a limit named on the runtime
 * (`rateLimits: { openai: { limit: 60, per: "1m" } }`), or one of a tool's or a model's own, that
 * the runtime applies around every attempt of the step. Pure: the slots are taken from the
 * backend by the host (`EnvelopeHost.rateLimits`).
 */

/** At most `limit` calls per `per`, shared by every worker on the backend. */
export interface RateLimitSpec {
  /** Calls per period: a whole number above 0. */
  limit: number;
  /**
   * The period: a duration (`"1s"`, `"1m"`, `"1h"`, `"1d"`; units ms, s, m, h, d, w) or
   * milliseconds above 0.
   */
  per: string | number;
}

/**
 * The rate limit of a tool, a model, a domain or an MCP server: the name of one of the runtime's
 * `rateLimits` (shared with whatever else names it), or a limit of its own.
 */
export type RateLimitDeclaration = string | RateLimitSpec;

/** A limit as the backend keeps it: its name and its rule. */
export interface ResolvedRateLimit {
  /**
   * The name its slots are kept under: a runtime's limit's name, or for a limit of its own
   * `tool:<agent>.<tool>`, `model:<model>`, `domain:<domain>` or `mcp:<server>`.
   */
  readonly name: string;
  readonly limit: number;
  readonly periodMs: number;
}

/** Where a step's slots come from (the runtime's backend), as the envelope sees it. */
export interface StepRateLimits {
  /** The limit the calls of tool `tool` of agent `agent` are under, if any. */
  ofTool(agent: string, tool: string): ResolvedRateLimit | undefined;
  /** The limit the calls of model `model` (a key of the runtime's models; the default when undefined) are under. */
  ofModel(model: string | undefined): ResolvedRateLimit | undefined;
  /** The limit the reads of domain `domain` (`ctx.domain`) are under, if any. */
  ofDomain(domain: string): ResolvedRateLimit | undefined;
  /** The limit the tool calls of MCP server `server` are under, if any. */
  ofMcp(server: string): ResolvedRateLimit | undefined;
  /** Takes the next slot of `limit` at `now` for every worker: when it comes (epoch ms). */
  take(limit: ResolvedRateLimit, now: number): Promise<number>;
  /** Holds `limit` until `until` for every worker (a provider said "retry after"). */
  hold(limit: ResolvedRateLimit, until: number, now: number): Promise<void>;
}

/** `20 per 1s`: a limit in words, for log lines and errors. */
export function describeRateLimit(limit: Pick<ResolvedRateLimit, "limit" | "periodMs">): string {
  const { periodMs } = limit;
  const units: [number, string][] = [
    [86_400_000, "d"],
    [3_600_000, "h"],
    [60_000, "m"],
    [1000, "s"],
  ];
  const unit = units.find(([ms]) => periodMs >= ms && periodMs % ms === 0);
  return `${limit.limit} per ${unit ? `${periodMs / unit[0]}${unit[1]}` : `${periodMs} ms`}`;
}

/**
 * `spec` checked (`where` says whose it is, e.g. `tool "search" of agent "researcher"`): the
 * limit and its period in ms. Throws `InvalidDefinitionError` naming the problem and the fix.
 */
export function checkRateLimitSpec(spec: unknown, where: string): { limit: number; periodMs: number } {
  const example = `e.g. { limit: 20, per: "1s" }`;
  if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
    throw new InvalidDefinitionError(
      `${where}: a rate limit is the name of one of the runtime's rateLimits or { limit, per } (${example}); got ${JSON.stringify(spec) ?? String(spec)}`,
    );
  }
  const { limit, per } = spec as Partial<RateLimitSpec>;
  if (!(typeof limit === "number" && Number.isSafeInteger(limit) && limit > 0)) {
    throw new InvalidDefinitionError(
      `${where}: rate limit \`limit\` must be a whole number of calls above 0 (got ${String(limit)}); ${example}`,
    );
  }
  let periodMs: number;
  try {
    periodMs = parseDuration(per as string | number, "`per`");
  } catch (error) {
    throw new InvalidDefinitionError(`${where}: rate limit ${(error as Error).message}; ${example}`);
  }
  return { limit, periodMs };
}

/**
 * The runtime's named limits checked: each name not empty, each limit valid. Throws
 * `InvalidDefinitionError` naming the limit.
 */
export function checkNamedRateLimits(limits: unknown): Map<string, ResolvedRateLimit> {
  const named = new Map<string, ResolvedRateLimit>();
  if (limits === undefined) return named;
  if (limits === null || typeof limits !== "object" || Array.isArray(limits)) {
    throw new InvalidDefinitionError(
      `rateLimits must be an object of named limits, e.g. rateLimits: { openai: { limit: 60, per: "1m" } }`,
    );
  }
  for (const [name, spec] of Object.entries(limits)) {
    if (name.trim() === "") throw new InvalidDefinitionError("rateLimits: a limit's name may not be empty");
    named.set(name, { name, ...checkRateLimitSpec(spec, `rate limit "${name}" of the runtime`) });
  }
  return named;
}

/**
 * The limit `declared` (by `owner`, e.g. `tool "search" of agent "researcher"`) stands for: a
 * named limit of the runtime, or its own one kept under `ownName`. Throws
 * `InvalidDefinitionError` for a name the runtime does not declare, or a bad limit.
 */
export function resolveRateLimit(
  declared: RateLimitDeclaration | undefined,
  owner: string,
  ownName: string,
  named: ReadonlyMap<string, ResolvedRateLimit>,
): ResolvedRateLimit | undefined {
  if (declared === undefined) return undefined;
  if (typeof declared !== "string") return { name: ownName, ...checkRateLimitSpec(declared, owner) };
  const limit = named.get(declared);
  if (!limit) {
    const known = [...named.keys()].join(", ") || "none";
    throw new InvalidDefinitionError(
      `${owner} declares rateLimit ${JSON.stringify(declared)}, which the runtime does not declare (its rateLimits: ${known}); declare it: new Runtime({ rateLimits: { ${JSON.stringify(declared)}: { limit: 60, per: "1m" } } }), or give the limit itself: rateLimit: { limit: 60, per: "1m" }`,
    );
  }
  return limit;
}
