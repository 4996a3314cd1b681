import { describe, expect, it } from "vitest";
import type { RateLimitStore } from "../contract/rate-limit-store.ts";
import { T0, type UseBackend } from "./conformance-fixtures.ts";

function storeOf(use: UseBackend): RateLimitStore {
  const store = use().rateLimits;
  if (!store) throw new Error("the backend has no `rateLimits` role");
  return store;
}

/** The rate limits role: slots taken one after the other, concurrent callers apart, a hold moving them on. */
export function describeRateLimits(use: UseBackend): void {
  describe("rate limits", () => {
    it("gives slots intervalMs apart from the first caller's time, and now when the limit is idle", async () => {
      const s = storeOf(use);
      expect(await s.takeRateSlot("search", 50, T0)).toBe(T0);
      expect(await s.takeRateSlot("search", 50, T0)).toBe(T0 + 50);
      expect(await s.takeRateSlot("search", 50, T0 + 10)).toBe(T0 + 100);
      // Idle for a while: the next caller goes at once; other names are apart.
      expect(await s.takeRateSlot("search", 50, T0 + 10_000)).toBe(T0 + 10_000);
      expect(await s.takeRateSlot("model:gpt", 33.5, T0)).toBe(T0);
      expect(await s.takeRateSlot("model:gpt", 33.5, T0)).toBe(T0 + 33.5);
    });

    it("gives concurrent callers distinct slots", async () => {
      const s = storeOf(use);
      const slots = await Promise.all(Array.from({ length: 20 }, () => s.takeRateSlot("api", 100, T0)));
      expect([...slots].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => T0 + i * 100));
    });

    it("holds a limit until a time: later slots start there, an earlier hold changes nothing", async () => {
      const s = storeOf(use);
      await s.takeRateSlot("api", 100, T0);
      await s.holdRateLimit("api", T0 + 5000, T0);
      await s.holdRateLimit("api", T0 + 1000, T0);
      expect(await s.takeRateSlot("api", 100, T0 + 1)).toBe(T0 + 5000);
      await s.holdRateLimit("fresh", T0 + 700, T0);
      expect(await s.takeRateSlot("fresh", 100, T0)).toBe(T0 + 700);
    });
  });
}
