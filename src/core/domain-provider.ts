/**
 * A source of domain data that `ctx.domain(domain, entity, params)` reads: either one function
 * that takes the entity name, or an object with a reader per entity.
 *
 * @example
 * const finance: DomainProvider = {
 *   quarterly: async ({ quarter }) => db.revenue(quarter),
 * };
 */
export type DomainProvider =
  | ((entity: string, params: Record<string, unknown>, info: DomainCallInfo) => unknown)
  | { [entity: string]: (params: Record<string, unknown>, info: DomainCallInfo) => unknown };

/** Where a domain read comes from. */
export interface DomainCallInfo {
  runId: string;
  signal: AbortSignal;
}
