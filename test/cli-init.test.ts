import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cairn } from "./helpers/cli.ts";

/**
 * `cairn init` writes the app; that the app installs, type-checks and passes its test on first
 * try is shown against the packed tarball by test/package-install.test.ts (`npm run test:package`).
 */
const work = mkdtempSync(join(tmpdir(), "cairn-init-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("cairn init", () => {
  it("writes an app with one agent, a node:test test and the scripts, named after its directory", async () => {
    const dir = join(work, "My Agent");
    const out = await cairn(["init", dir]);
    expect(out.stderr).toBe("");
    expect(out.code).toBe(0);
    expect(out.stdout).toContain("npm install && npm test");
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    expect(pkg.name).toBe("my-agent");
    expect(Object.keys(pkg.scripts)).toEqual(["start", "test", "typecheck"]);
    expect(Object.keys(pkg.dependencies)).toEqual(["cairn", "zod"]);
    expect(Object.keys(pkg.devDependencies).sort()).toEqual(["@types/node", "tsx", "typescript"]);
    expect(readFileSync(join(dir, "test", "agent.test.ts"), "utf8")).toContain('from "cairn/testing"');
    expect(readFileSync(join(dir, "src", "agent.ts"), "utf8")).toContain("defineAgent");
    expect(JSON.parse(readFileSync(join(dir, "tsconfig.json"), "utf8")).compilerOptions.skipLibCheck).toBe(false);
  });

  it("refuses a directory that is not empty, and says what to give", async () => {
    const out = await cairn(["init", join(work, "My Agent")]);
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/is not empty; give a new or empty directory/);
  });
});
