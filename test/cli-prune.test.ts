import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { endedImport } from "../src/backend/conformance/prune-fixtures.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { cairn } from "./helpers/cli.ts";

/** `cairn prune` (DESIGN §7, "Retention"): a dry run lists, the prune deletes, bad values are usage errors. */
const dir = mkdtempSync(join(tmpdir(), "cairn-cli-prune-"));
const db = join(dir, "runs.db");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("cairn prune", () => {
  it("lists on --dry-run, then deletes the ended runs of the states and agent asked; keeps the rest", async () => {
    const backend = new SqliteBackend({ path: db });
    await backend.init();
    const ids = { done: "old-done", failed: "old-failed", other: "old-other", recent: "new-done" };
    await backend.importRun(endedImport({ id: ids.done }));
    await backend.importRun(endedImport({ id: ids.failed, state: "FAILED" }));
    await backend.importRun(endedImport({ id: ids.other, run: { agent: "other" } }));
    await backend.importRun(endedImport({ id: ids.recent, endedAt: Date.now() }));
    const by = { kind: "user" as const, id: "alice" };
    await backend.forkRun({
      run: {
        ...{ id: "fork-1", agent: "report_builder", workflow: "build", key: null, input: {} },
        ...{
          versions: { workflow: "wf-1", policy: null, runtime: "0.1.0" },
          meta: {},
          actor: by,
          reason: "fork",
          at: Date.now(),
        },
      },
      forkedFrom: { runId: ids.done, fromStep: 1, kind: "fork", by, at: Date.now() },
      steps: [],
    });
    await backend.close();

    const dry = await cairn(["prune", "--older-than", "30d", "--dry-run", "--db", db]);
    expect(dry.stderr).toBe("");
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain("would prune 3 runs");
    expect(dry.stdout).toContain("nothing deleted");
    for (const id of [ids.done, ids.failed, ids.other]) expect(dry.stdout).toContain(id);
    expect(dry.stdout).not.toContain(ids.recent);

    const some = await cairn([
      "prune",
      "--older-than",
      "30d",
      "--state",
      "completed",
      "--agent",
      "report_builder",
      "--db",
      db,
    ]);
    expect(some.code).toBe(0);
    expect(some.stdout).toMatch(
      /^pruned 1 run \(COMPLETED of agent report_builder\) that ended before .* in 1 batch$/m,
    );
    const rest = await cairn(["prune", "--older-than", "720h", "--batch-size", "1", "--db", db]);
    expect(rest.stdout).toContain("pruned 2 runs");
    expect(rest.stdout).toContain("in 3 batches");

    const check = new SqliteBackend({ path: db });
    await check.init();
    try {
      expect((await check.listRuns({})).map((r) => r.id).sort()).toEqual(["fork-1", ids.recent]);
    } finally {
      await check.close();
    }
    const shown = await cairn(["show", "fork-1", "--db", db]);
    expect(shown.stdout).toMatch(new RegExp(`lineage\\s+forked from run ${ids.done} \\(pruned\\) at step 1`));
  }, 60_000);

  it("refuses a bad --older-than, an open --state, a missing --older-than with usage errors", async () => {
    const bad = await cairn(["prune", "--older-than", "30 days", "--db", db]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--older-than must be a duration such as "30d", "12h", "90m" or "45s"');
    expect(bad.stderr).toContain('(got "30 days")');
    const open = await cairn(["prune", "--older-than", "1d", "--state", "PAUSED", "--db", db]);
    expect(open.code).toBe(2);
    expect(open.stderr).toContain('cannot prune runs in state "PAUSED"');
    const missing = await cairn(["prune", "--db", db]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("needs --older-than <duration>");
  }, 60_000);
});
