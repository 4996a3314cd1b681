import { describe, expect, it } from "vitest";
import { digestText } from "./args-digest.ts";

describe("digestText", () => {
  it("is stable and tells different arguments apart", () => {
    expect(digestText('{"quarter":"2026-Q3"}')).toBe(digestText('{"quarter":"2026-Q3"}'));
    expect(digestText('{"quarter":"2026-Q3"}')).not.toBe(digestText('{"quarter":"2026-Q4"}'));
    expect(digestText("")).not.toBe(digestText("null"));
    const seen = new Set(Array.from({ length: 10_000 }, (_, i) => digestText(`{"i":${i}}`)));
    expect(seen.size).toBe(10_000);
  });

  it("uses sha-256 for long texts", () => {
    const long = "x".repeat(5000);
    expect(digestText(long)).toMatch(/^s[0-9a-f]{32}$/);
    expect(digestText(long)).not.toBe(digestText(`${long}y`));
    expect(digestText("short")).toMatch(/^f[0-9a-f]{16}$/);
  });
});
