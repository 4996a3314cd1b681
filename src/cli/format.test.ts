import { describe, expect, it } from "vitest";
import { age, until } from "./format.ts";

describe("durations in words", () => {
  const now = Date.UTC(2026, 11, 2, 12, 0, 0);

  it("round to the nearest of the largest unit that fits, so a second later says the same", () => {
    // An approval that expires in 48 hours, read by `run` and then by `show` a second later.
    expect(until(now + 48 * 3_600_000, now)).toBe("in 2d");
    expect(until(now + 48 * 3_600_000 - 1000, now)).toBe("in 2d");
    expect(until(now + 3_599_000, now)).toBe("in 1h");
    expect(until(now + 90_000, now)).toBe("in 2m");
    expect(until(now + 59_000, now)).toBe("in 59s");
  });

  it("says how long ago a passed time was, in the same units", () => {
    expect(age(now - 47 * 3_600_000, now)).toBe("2d ago");
    expect(age(now - 5 * 3_600_000, now)).toBe("5h ago");
    expect(until(now - 30_000, now)).toBe("30s ago");
  });
});
