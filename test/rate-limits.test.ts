import { describe, expect, it } from "vitest";
import { InMemoryBackend } from "../src/backend/memory/memory-backend.ts";
import { ModelUnavailableError } from "../src/core/errors.ts";
import { SharedRateLimiter } from "../src/runtime/rate-limiter.ts";
import { VirtualClock } from "../src/runtime/virtual-clock.ts";

describe("shared rate limits on the virtual clock", () => {
  it("spaces calls periodMs / limit apart: 100 calls at 20 per second take 4.95 s", async () => {
    const clock = new VirtualClock();
    const start = clock.now();
    const limiter = new SharedRateLimiter(new InMemoryBackend(), { api: { limit: 20, periodMs: 1000 } }, { clock });
    const times: number[] = [];
    for (let i = 0; i < 100; i++) {
      await limiter.take("api");
      times.push(clock.now() - start);
    }
    expect(times.slice(0, 4)).toEqual([0, 50, 100, 150]);
    expect(times.at(-1)).toBe(4950);
    // In every window of one second, at most 20 calls.
    for (const t of times) expect(times.filter((u) => u >= t && u < t + 1000).length).toBeLessThanOrEqual(20);
  });

  it('takes the runtime\'s { limit, per } form too: 2 per "1m" is a call every 30 s', async () => {
    const clock = new VirtualClock();
    const limiter = new SharedRateLimiter(new InMemoryBackend(), { api: { limit: 2, per: "1m" } }, { clock });
    expect([await limiter.take("api"), await limiter.take("api"), await limiter.take("api")]).toEqual([
      0, 30_000, 30_000,
    ]);
  });

  it("holds the limit for everyone when a call is told to retry after a while (429)", async () => {
    const clock = new VirtualClock();
    const backend = new InMemoryBackend();
    const logged: string[] = [];
    const logger = { debug() {}, info: (m: string) => logged.push(m), warn: (m: string) => logged.push(m), error() {} };
    const a = new SharedRateLimiter(backend, { model: { limit: 10, periodMs: 1000 } }, { clock, logger });
    const b = new SharedRateLimiter(backend, { model: { limit: 10, periodMs: 1000 } }, { clock });
    const tooMany = new ModelUnavailableError("429", { provider: "test", status: 429, retryAfterMs: 30_000 });
    await expect(a.run("model", () => Promise.reject(tooMany))).rejects.toBe(tooMany);
    const before = clock.now();
    expect(await b.take("model")).toBe(30_000);
    expect(clock.now() - before).toBe(30_000);
    expect(logged.some((m) => m.includes('rate limit "model" held for 30000 ms'))).toBe(true);
    expect(() => new SharedRateLimiter(backend, { bad: { limit: 0, periodMs: 1000 } })).toThrow(/whole number/);
    expect(() => new SharedRateLimiter(backend, { bad: { limit: 2, per: "often" } })).toThrow(
      /rate limit "bad": rate limit `per` must be a duration/,
    );
    await expect(a.take("unknown")).rejects.toThrow(/no rate limit named "unknown"/);
  });
});
