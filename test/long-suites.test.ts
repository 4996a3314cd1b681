import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { root } from "./helpers/cli.ts";
import { LONG_SUITES } from "./long-suites.ts";

/** A long suite renamed or removed would silently leave both `npm test` and `npm run test:long`. */
describe("the suites npm test leaves to npm run test:long", () => {
  it("all exist, and are test files", () => {
    expect(LONG_SUITES.length).toBeGreaterThan(0);
    for (const file of LONG_SUITES) {
      expect(file, file).toMatch(/\.test\.ts$/);
      expect(existsSync(join(root, file)), file).toBe(true);
    }
  });
});
