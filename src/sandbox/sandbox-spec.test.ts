import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../core/errors.ts";
import { normalizeSpec, specDifference } from "./sandbox-spec.ts";

describe("normalizeSpec", () => {
  it("fills the defaults: no network, no env, no limits, read-only mounts", () => {
    expect(normalizeSpec(undefined)).toEqual({ network: false, env: {}, limits: {}, mounts: [] });
    expect(normalizeSpec({ mounts: [{ host: "/srv/repo", path: "/repo" }] }).mounts).toEqual([
      { host: "/srv/repo", path: "/repo", readOnly: true },
    ]);
  });

  it.each([
    [{ network: "yes" }, /network must be a boolean/],
    [{ env: { "1X": "a" } }, /not a variable name/],
    [{ env: { A: "a\u0000b" } }, /NUL/],
    [{ limits: { memoryBytes: 1.5 } }, /positive whole number/],
    [{ limits: { disk: 1 } }, /not a limit \(known: cpuSeconds/],
    [{ mounts: [{ host: "relative", path: "/x" }] }, /absolute, normalized path/],
    [{ mounts: [{ host: "/a", path: "/x/../y" }] }, /absolute, normalized path/],
    [{ mounts: [{ host: "/a", path: "/workspace/a" }] }, /covers the sandbox's own \/workspace/],
    [{ mounts: [{ host: "/a", path: "/proc" }] }, /covers the sandbox's own \/proc/],
    [{ mounts: [{ host: "/a", path: "/" }] }, /covers the sandbox's own root/],
  ])("refuses %j", (spec, message) => {
    expect(() => normalizeSpec(spec as never)).toThrow(InvalidInputError);
    expect(() => normalizeSpec(spec as never)).toThrow(message);
  });
});

describe("specDifference", () => {
  it("names network, limits and mounts that differ, in any key order; env never", () => {
    const a = normalizeSpec({ limits: { cpuSeconds: 1, memoryBytes: 2 }, env: { A: "1" } });
    const b = normalizeSpec({ limits: { memoryBytes: 2, cpuSeconds: 1 }, env: { A: "2" } });
    expect(specDifference(a, b)).toEqual([]);
    const c = normalizeSpec({ network: true, mounts: [{ host: "/a", path: "/a", readOnly: false }] });
    expect(specDifference(a, c)).toEqual(["network", "limits", "mounts"]);
  });
});
