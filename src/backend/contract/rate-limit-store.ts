/**
 * The rate limits role of the storage contract (DESIGN §4 *Rate limits*): for each limit's name,
 * the time its next slot is free, shared by every worker on the backend. Each call takes a slot
 * in one atomic write, so calls from any number of processes get distinct slots `intervalMs`
 * apart. Checked by `conformance/rate-limits-conformance.ts`.
 */
export interface RateLimitStore {
  /**
   * Takes the next slot of `name`: the later of `now` and the stored next-free time, which moves
   * on by `intervalMs`. Returns the slot's time (epoch ms, maybe fractional): the caller waits
   * until then.
   */
  takeRateSlot(name: string, intervalMs: number, now: number): Promise<number>;
  /** Moves the next-free time of `name` to `until` when that is later (a provider said "retry after"). */
  holdRateLimit(name: string, until: number, now: number): Promise<void>;
}
