import { describe, expect, it } from "vitest";
import {
  HeartbeatTimeoutError,
  InvalidInputError,
  LeaseLostError,
  NonRetryableError,
  StepTimeoutError,
  ToolFailedError,
} from "./errors.ts";
import {
  DEFAULT_RETRY_POLICY,
  isRetryable,
  type RetryPolicy,
  resolveRetryPolicy,
  retryDelayMs,
} from "./retry-policy.ts";

describe("retry policy defaults", () => {
  it("are 1 s, x2, 100 s cap, 5 attempts, with jitter (DESIGN §4)", () => {
    expect(DEFAULT_RETRY_POLICY.initialIntervalMs).toBe(1000);
    expect(DEFAULT_RETRY_POLICY.backoffCoefficient).toBe(2);
    expect(DEFAULT_RETRY_POLICY.maximumIntervalMs).toBe(100_000);
    expect(DEFAULT_RETRY_POLICY.maximumAttempts).toBe(5);
    expect(DEFAULT_RETRY_POLICY.jitter).toBeGreaterThan(0);
    expect(DEFAULT_RETRY_POLICY.jitter).toBeLessThan(1);
    expect(DEFAULT_RETRY_POLICY.nonRetryableErrors).toEqual([]);
  });

  it("fill in what a policy leaves out, and keep what it sets", () => {
    expect(resolveRetryPolicy(undefined)).toEqual(DEFAULT_RETRY_POLICY);
    expect(resolveRetryPolicy({})).toEqual(DEFAULT_RETRY_POLICY);
    const p = resolveRetryPolicy({ maximumAttempts: 2, initialIntervalMs: 5 });
    expect(p).toEqual({ ...DEFAULT_RETRY_POLICY, maximumAttempts: 2, initialIntervalMs: 5 });
  });

  it("treat an explicit undefined as not set", () => {
    const p = resolveRetryPolicy({ maximumAttempts: undefined, jitter: 0 } as unknown as RetryPolicy);
    expect(p.maximumAttempts).toBe(5);
    expect(p.jitter).toBe(0);
  });

  it("do not leak changes into the shared default", () => {
    const p = resolveRetryPolicy({});
    p.maximumAttempts = 99;
    expect(DEFAULT_RETRY_POLICY.maximumAttempts).toBe(5);
  });
});

describe("retryDelayMs", () => {
  it("grows by the coefficient from the initial interval and stops at the cap", () => {
    const p = resolveRetryPolicy({ jitter: 0 });
    const delays = [2, 3, 4, 5, 6, 7, 8, 9, 10, 20].map((n) => retryDelayMs(p, n, 0.5));
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 64_000, 100_000, 100_000, 100_000]);
  });

  it("uses the policy's own numbers", () => {
    const p = resolveRetryPolicy({ initialIntervalMs: 10, backoffCoefficient: 3, maximumIntervalMs: 200, jitter: 0 });
    expect([2, 3, 4, 5, 6].map((n) => retryDelayMs(p, n, 0))).toEqual([10, 30, 90, 200, 200]);
  });

  it("with coefficient 1 waits the same every time", () => {
    const p = resolveRetryPolicy({ initialIntervalMs: 7, backoffCoefficient: 1, jitter: 0 });
    expect([2, 3, 9].map((n) => retryDelayMs(p, n, 0.3))).toEqual([7, 7, 7]);
  });

  it("keeps jitter within ± the jitter fraction, and under the cap", () => {
    const p = resolveRetryPolicy({});
    for (let n = 2; n <= 12; n++) {
      const base = Math.min(100_000, 1000 * 2 ** (n - 2));
      const low = retryDelayMs(p, n, 0);
      const high = retryDelayMs(p, n, 0.999_999);
      const mid = retryDelayMs(p, n, 0.5);
      expect(low, `attempt ${n}`).toBe(Math.round(base * (1 - p.jitter)));
      expect(high, `attempt ${n}`).toBeLessThanOrEqual(Math.min(100_000, Math.round(base * (1 + p.jitter))));
      expect(high, `attempt ${n}`).toBeGreaterThanOrEqual(mid);
      expect(mid, `attempt ${n}`).toBe(base);
      expect(low).toBeGreaterThan(0);
    }
    // Below the cap the upper bound is reached.
    expect(retryDelayMs(p, 2, 0.999_999)).toBe(1200);
  });

  it("spreads delays when random differs (jitter does something)", () => {
    const p = resolveRetryPolicy({ jitter: 0.5 });
    const seen = new Set([0, 0.25, 0.5, 0.75, 0.99].map((r) => retryDelayMs(p, 3, r)));
    expect(seen.size).toBe(5);
  });

  it("never returns a negative delay", () => {
    const p = resolveRetryPolicy({ initialIntervalMs: 0, jitter: 1 });
    expect(retryDelayMs(p, 2, 0)).toBe(0);
    expect(retryDelayMs(p, 5, 0.9)).toBe(0);
  });
});

describe("isRetryable", () => {
  const defaults = resolveRetryPolicy({});

  it("retries ordinary errors and thrown non-errors", () => {
    expect(isRetryable(defaults, new Error("boom"))).toBe(true);
    expect(isRetryable(defaults, new TypeError("x is undefined"))).toBe(true);
    expect(isRetryable(defaults, "a string")).toBe(true);
  });

  it("never retries NonRetryableError, whatever the policy", () => {
    expect(isRetryable(defaults, new NonRetryableError("account closed"))).toBe(false);
    class Closed extends NonRetryableError {}
    expect(isRetryable(defaults, new Closed("subclass too"))).toBe(false);
  });

  it("stops on classes listed in nonRetryableErrors, subclasses included", () => {
    class QuotaError extends Error {}
    class HardQuotaError extends QuotaError {}
    const p = resolveRetryPolicy({ nonRetryableErrors: [QuotaError] });
    expect(isRetryable(p, new QuotaError("over"))).toBe(false);
    expect(isRetryable(p, new HardQuotaError("way over"))).toBe(false);
    expect(isRetryable(p, new Error("other"))).toBe(true);
  });

  it("stops on names listed in nonRetryableErrors", () => {
    const p = resolveRetryPolicy({ nonRetryableErrors: ["QuotaExceeded"] });
    const named = Object.assign(new Error("over quota"), { name: "QuotaExceeded" });
    expect(isRetryable(p, named)).toBe(false);
    expect(isRetryable(p, new Error("QuotaExceeded"))).toBe(true); // the message is never matched
  });

  it("reads a Cairn error's retryability from its class", () => {
    expect(new StepTimeoutError("slow").retryable).toBe(true);
    expect(new HeartbeatTimeoutError("quiet").retryable).toBe(true);
    expect(new InvalidInputError("bad").retryable).toBe(false);
    expect(new LeaseLostError("gone").retryable).toBe(false);
    expect(new ToolFailedError("failed", { tool: "t", attempts: 1 }).retryable).toBe(false);
    expect(isRetryable(defaults, new StepTimeoutError("slow"))).toBe(true);
    expect(isRetryable(defaults, new HeartbeatTimeoutError("quiet"))).toBe(true);
    expect(isRetryable(defaults, new InvalidInputError("bad"))).toBe(false);
  });

  it("lets a policy make a retryable Cairn error non-retryable (the list says never)", () => {
    expect(
      isRetryable(resolveRetryPolicy({ nonRetryableErrors: [StepTimeoutError] }), new StepTimeoutError("slow")),
    ).toBe(false);
    expect(
      isRetryable(resolveRetryPolicy({ nonRetryableErrors: ["StepTimeoutError"] }), new StepTimeoutError("s")),
    ).toBe(false);
  });

  it("honours `retryable: false` on a thrown error (the ModelProvider contract)", () => {
    const error = Object.assign(new Error("context too long"), { retryable: false });
    expect(isRetryable(defaults, error)).toBe(false);
    expect(isRetryable(defaults, Object.assign(new Error("rate limited"), { retryable: true }))).toBe(true);
  });
});

describe("resolveRetryPolicy validation", () => {
  it.each<[string, RetryPolicy]>([
    ["maximumAttempts 0", { maximumAttempts: 0 }],
    ["maximumAttempts 1.5", { maximumAttempts: 1.5 }],
    ["maximumAttempts NaN", { maximumAttempts: Number.NaN }],
    ["initialIntervalMs -1", { initialIntervalMs: -1 }],
    ["backoffCoefficient 0.5", { backoffCoefficient: 0.5 }],
    ["jitter 1.5", { jitter: 1.5 }],
    ["jitter -0.1", { jitter: -0.1 }],
    ["maximumIntervalMs -1", { maximumIntervalMs: -1 }],
  ])("refuses %s with a RangeError naming the field", (_label, policy) => {
    const field = Object.keys(policy)[0] as string;
    expect(() => resolveRetryPolicy(policy)).toThrow(RangeError);
    expect(() => resolveRetryPolicy(policy)).toThrow(field);
  });

  it("accepts the edges", () => {
    expect(
      resolveRetryPolicy({ maximumAttempts: 1, initialIntervalMs: 0, backoffCoefficient: 1, jitter: 1 }),
    ).toMatchObject({ maximumAttempts: 1, initialIntervalMs: 0, backoffCoefficient: 1, jitter: 1 });
  });
});
