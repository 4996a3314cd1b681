import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteBackend } from "../src/sqlite.ts";
import { cairn, root } from "./helpers/cli.ts";

/**
 * `cairn rerun` and `cairn fork` (DESIGN §4, "Fork and rerun"): a run that FAILED on a bug in a
 * tool is rerun with the module that fixes it; the lineage shows in `cairn show` both ways.
 */
const dir = mkdtempSync(join(tmpdir(), "cairn-cli-fork-"));
const db = join(dir, "runs.db");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const runIdOf = (stdout: string) => /^run (run_\S+)/m.exec(stdout)?.[1] as string;

describe("cairn rerun / cairn fork", () => {
  it("reruns a FAILED run on the fixed module from its failed step, then forks the rerun", async () => {
    const input = JSON.stringify({ id: "i-1" });
    const failed = await cairn([
      "run",
      "test/fixtures/rerun-buggy.ts",
      "invoices",
      "total",
      "--input",
      input,
      "--db",
      db,
    ]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain("parse: unexpected token");
    const source = runIdOf(failed.stdout);

    // The error tells what to do, with commands that exist.
    const resume = await cairn(["resume", source, "--db", db]);
    expect(resume.code).toBe(1);
    expect(resume.stderr).toContain(`cairn rerun ${source} --db ${db}`);
    const rerun = await cairn(["rerun", source, "--module", "test/fixtures/rerun-fixed.ts", "--db", db]);
    expect(rerun.stderr).toBe("");
    expect(rerun.stdout).toContain(`from run ${source} at step 2`);
    expect(rerun.stdout).toContain('"total": 12.5');
    expect(rerun.code).toBe(0);
    const copy = runIdOf(rerun.stdout);

    const backend = new SqliteBackend({ path: db });
    await backend.init();
    try {
      const steps = await backend.loadSteps(copy);
      expect(steps.map((s) => [s.seq, s.name, s.status, s.epoch])).toEqual([
        [1, "download", "completed", 0],
        [2, "parse", "completed", 1],
      ]);
      expect((await backend.getRun(copy))?.meta.module).toBe(resolve(root, "test/fixtures/rerun-fixed.ts"));
    } finally {
      await backend.close();
    }
    const shownSource = await cairn(["show", source, "--db", db]);
    expect(shownSource.stdout).toMatch(new RegExp(`forks\\s+run ${copy} \\(rerun from step 2`));
    const shownCopy = await cairn(["show", copy, "--db", db]);
    expect(shownCopy.stdout).toMatch(new RegExp(`lineage\\s+rerun of run ${source} at step 2`));

    const fork = await cairn(["fork", copy, "--from-step", "2", "--detach", "--db", db]);
    expect(fork.stdout).toContain(`from run ${copy} at step 2`);
    expect(fork.stdout).toContain("left PENDING for a worker");
    expect(fork.code).toBe(0);
    const bad = await cairn(["fork", copy, "--from-step", "zero", "--db", db]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--from-step must be a step number");
  }, 120_000);
});
