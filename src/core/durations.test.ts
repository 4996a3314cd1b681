import { describe, expect, it } from "vitest";
import { durationAgo, durationUntil, elapsed, inUnits } from "./durations.ts";

describe("duration wording (one place for the CLI and the dashboard)", () => {
  const now = 1_800_000_000_000;
  it("rounds to the largest unit that fits", () => {
    expect(inUnits(59)).toBe("59s");
    expect(inUnits(90)).toBe("2m");
    expect(inUnits(3599)).toBe("1h");
    expect(inUnits(47 * 3600 + 3599)).toBe("2d");
    expect(inUnits(-5)).toBe("0s");
  });
  it("says ago and in the same way whichever side of now", () => {
    expect(durationUntil(now + 48 * 3_600_000 - 1000, now)).toBe("in 2d");
    expect(durationAgo(now - 5 * 3_600_000, now)).toBe("5h ago");
    expect(durationUntil(now - 30_000, now)).toBe("30s ago");
  });
  it("gives step durations their precision below ten seconds", () => {
    expect(elapsed(412.4)).toBe("412 ms");
    expect(elapsed(4200)).toBe("4.2s");
    expect(elapsed(37_000)).toBe("37s");
    expect(elapsed(185_000)).toBe("3m");
  });
});
