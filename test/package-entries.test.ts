import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { root } from "./helpers/cli.ts";

/**
 * What each entry of the package pulls in (issue 25): `cairn/testing` must work under any test
 * runner, so nothing it imports, however deep, may import Vitest; only the conformance suite
 * (`cairn/testing/conformance`) needs it.
 */

/**
 * The bare modules (packages) that `entry` imports, following its relative imports; with
 * `valuesOnly`, the ones it loads when imported (not `import type`, erased at build).
 */
function packagesOf(entry: string, valuesOnly = false): Set<string> {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/^(?:import|export)\s[^;]*?from\s+"([^"]+)";/gms)) {
      const spec = match[1] as string;
      if (valuesOnly && /^(?:import|export)\s+type\s/.test(match[0])) continue;
      if (spec.startsWith(".")) visit(resolve(dirname(file), spec));
      else packages.add(spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : (spec.split("/")[0] as string));
    }
  };
  visit(join(root, "src", entry));
  return packages;
}

describe("package entries", () => {
  it("cairn/testing works under any test runner: nothing it imports needs Vitest", () => {
    expect([...packagesOf("testing.ts")]).not.toContain("vitest");
    expect([...packagesOf("index.ts")]).not.toContain("vitest");
  });

  it("the conformance suite is the entry that needs Vitest", () => {
    expect([...packagesOf("testing-conformance.ts")]).toContain("vitest");
  });

  it("the root entry and cairn/testing load no optional peer dependency (they load at first use)", () => {
    const optional = [
      "pg",
      "@ai-sdk/provider",
      "@ai-sdk/openai",
      "@ai-sdk/anthropic",
      "@modelcontextprotocol/sdk",
      "tsx",
    ];
    for (const entry of ["index.ts", "testing.ts", "sqlite.ts", "server.ts", "client.ts"]) {
      const loaded = [...packagesOf(entry, true)];
      expect(
        loaded.filter((p) => optional.includes(p)),
        entry,
      ).toEqual([]);
    }
    // The check sees them where they are imported for their values.
    const all = [...packagesOf("index.ts")];
    expect(all).toContain("@modelcontextprotocol/sdk"); // as types only
  });
});
