import type { RateLimitStore } from "../contract/rate-limit-store.ts";

/** The rate limits of `InMemoryBackend` (`RateLimitStore`): the next free time of each name. */
export class MemoryRateLimits implements RateLimitStore {
  readonly #next = new Map<string, number>();

  async takeRateSlot(name: string, intervalMs: number, now: number): Promise<number> {
    const slot = Math.max(this.#next.get(name) ?? now, now);
    this.#next.set(name, slot + intervalMs);
    return slot;
  }

  async holdRateLimit(name: string, until: number, _now: number): Promise<void> {
    this.#next.set(name, Math.max(this.#next.get(name) ?? until, until));
  }
}
