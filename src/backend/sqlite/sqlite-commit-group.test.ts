import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LeaseLostError } from "../../core/errors.ts";
import { fullStep, move, runningRun, T0 } from "../conformance/conformance-fixtures.ts";
import { SqliteBackend } from "./sqlite-backend.ts";

/** The group commit of `SqliteBackend` (`sqlite-commit-group.ts`): writes of one turn share a transaction. */
describe("SqliteBackend group commit", () => {
  const opened: SqliteBackend[] = [];
  afterEach(async () => {
    for (const b of opened.splice(0)) {
      await b.close();
      rmSync(dirname(b.path), { recursive: true, force: true });
    }
  });
  const open = async () => {
    const b = new SqliteBackend({ path: join(tmpdir(), "cairn-sqlite-group", randomUUID(), "cairn.db") });
    opened.push(b);
    await b.init();
    return b;
  };

  it("fails only the write a fence refused; the others of its turn commit", async () => {
    const b = await open();
    const runs = await Promise.all(Array.from({ length: 5 }, () => runningRun(b)));
    const [stale] = runs;
    // Writes made in one turn: the second run's under an epoch it no longer has.
    const outcomes = await Promise.allSettled(
      runs.map((run) =>
        b.saveSteps([fullStep(run.id, 1, run.epoch)], { epoch: run === stale ? 0 : run.epoch, sync: true }),
      ),
    );
    expect(outcomes[0]?.status).toBe("rejected");
    expect((outcomes[0] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
    expect(outcomes.slice(1).map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "fulfilled"]);
    // Read by another connection: the others are committed, the refused one wrote nothing.
    const other = new SqliteBackend({ path: b.path });
    await other.init();
    try {
      expect(await other.loadSteps(stale?.id ?? "")).toEqual([]);
      for (const run of runs.slice(1)) expect((await other.loadSteps(run.id)).map((s) => s.seq)).toEqual([1]);
    } finally {
      await other.close();
    }
  });

  it("gives each transition of a turn its own outcome, planned against the earlier ones", async () => {
    const b = await open();
    const run = await runningRun(b);
    const other = await runningRun(b);
    // Two moves of one run in one turn: the first commits, the second is refused (from is stale),
    // and a third run's move in the same turn is unaffected.
    const outcomes = await Promise.allSettled([
      b.transition(move(run, "RUNNING", "COMPLETED", { at: T0 + 1, patch: { output: 1, releaseLease: true } })),
      b.transition(move(run, "RUNNING", "FAILED", { at: T0 + 2, patch: { releaseLease: true } })),
      b.transition(move(other, "RUNNING", "COMPLETED", { at: T0 + 3, patch: { output: 2, releaseLease: true } })),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((await b.getRun(run.id))?.state).toBe("COMPLETED");
    expect((await b.getRun(other.id))?.output).toBe(2);
  });

  it("writes what is queued before the file closes", async () => {
    const b = await open();
    const run = await runningRun(b);
    const saved = b.saveSteps([fullStep(run.id, 1, run.epoch)], { epoch: run.epoch, sync: true });
    await b.close();
    await saved;
    const other = new SqliteBackend({ path: b.path });
    await other.init();
    try {
      expect((await other.loadSteps(run.id)).map((s) => s.seq)).toEqual([1]);
    } finally {
      await other.close();
    }
  });
});
