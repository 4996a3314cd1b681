import pg from "pg";
import { describe, expect, it } from "vitest";
import { backendPerTest } from "../../../../test/helpers/postgres-backend-per-test.ts";
import { until } from "../../../../test/helpers/runtime-helpers.ts";
import { InvalidInputError, LeaseLostError } from "../../../core/errors.ts";
import type { RunRecord } from "../../../core/records.ts";
import type { RuntimeBackend, TransitionRequest } from "../../backend.ts";
import {
  endRun,
  fullStep,
  move,
  refusal,
  runInput,
  runningRun,
  storedState,
  T0,
} from "../../conformance/conformance-fixtures.ts";
import { InMemoryBackend } from "../../memory/memory-backend.ts";

/**
 * What a PostgreSQL backend is asked for at once shares a statement or a transaction: transitions
 * (`transitionsIn`), run creation and run reads. What that stores must be what the same calls one
 * after another store, a refused call must not take the others down, and a batch that fails as a
 * whole must give each caller its own outcome.
 */

const files = backendPerTest();
const open = () => files.open();

/** The transaction each transition was written in (the feed key of a transition is its transaction's id). */
async function transactionsOf(runIds: readonly string[]): Promise<Map<string, string>> {
  const { rows } = await files.db.query<{ run_id: string; feed_key: string }>(
    `SELECT run_id, feed_key::text AS feed_key FROM ${pg.escapeIdentifier(files.backend.schema)}.transitions
     WHERE run_id = ANY ($1) AND id = (SELECT max(id) FROM ${pg.escapeIdentifier(files.backend.schema)}.transitions AS t
       WHERE t.run_id = transitions.run_id)`,
    [runIds],
  );
  return new Map(rows.map((r) => [r.run_id, r.feed_key]));
}

/**
 * A parent paused on two children, the children RUNNING, and an unrelated RUNNING run; returns the
 * requests that end all three (the unrelated run first). Same ids on every backend.
 */
async function family(b: RuntimeBackend): Promise<{ ids: string[]; ends: TransitionRequest[] }> {
  const parent = await runningRun(b, { overrides: { id: "fam-parent" } });
  const children = [
    await runningRun(b, { workerId: "w2", overrides: { id: "fam-parent.1", parentRunId: parent.id } }),
    await runningRun(b, { workerId: "w3", overrides: { id: "fam-parent.2", parentRunId: parent.id } }),
  ];
  const suspended = await b.suspend({
    runId: parent.id,
    epoch: parent.epoch,
    waits: children.map((child, i) => ({
      runId: parent.id,
      id: `w${i + 1}`,
      seq: i + 1,
      kind: "child" as const,
      name: child.id,
      status: "open" as const,
      details: {},
      dueAt: null,
      resolution: undefined,
      createdAt: T0 + 500,
    })),
    blockedOn: ["w1", "w2"],
    pausedReason: "awaiting_child",
    actor: { kind: "worker", id: "w1" },
    reason: "waits for its children",
    versions: { workflow: "wf-1", policy: null, runtime: "0.1.0" },
    at: T0 + 500,
  });
  expect(suspended.paused).toBe(true);
  const other = await runningRun(b, { overrides: { id: "other" } });
  const end = (run: RunRecord, i: number) =>
    move(run, "RUNNING", "COMPLETED", { at: T0 + 1_000 + i, patch: { output: { i }, releaseLease: true } });
  return {
    ids: [parent.id, ...children.map((c) => c.id), other.id],
    ends: [end(other, 0), ...children.map((c, i) => end(c, i + 1))],
  };
}

describe("PostgresBackend batches transitions", () => {
  it("stores what the same transitions one after another store: siblings of one parent in one transaction, a run's plain end in one statement", async () => {
    const pgBackend = await open();
    const memory = new InMemoryBackend();
    const onPg = await family(pgBackend);
    const inMemory = await family(memory);
    // At once on PostgreSQL (one batch: asked for in the same turn of the event loop); one after
    // another in memory.
    const results = await Promise.all(onPg.ends.map((request) => pgBackend.transition(request)));
    const expected = [];
    for (const request of inMemory.ends) expected.push(await memory.transition(request));
    expect(results).toStrictEqual(expected);
    for (const id of onPg.ids) {
      const stored = await storedState(pgBackend, id);
      expect(stored).toStrictEqual(await storedState(memory, id));
    }
    // The parent saw both ends: its waits resolved, and it was woken once both were.
    const parent = await storedState(pgBackend, "fam-parent");
    expect(parent.waits.map((w) => w.status)).toEqual(["resolved", "resolved"]);
    expect(parent.run?.state).toBe("RESUMING");
    // The children's ends, which resolve their parent's waits, share one transaction; the other
    // run's end needs nothing but its row, and is written by one statement of its own (`moveRuns`).
    const transactions = await transactionsOf(["fam-parent.1", "fam-parent.2", "other"]);
    expect(transactions.get("fam-parent.1")).toBe(transactions.get("fam-parent.2"));
    expect(transactions.get("other")).not.toBe(transactions.get("fam-parent.1"));
  });

  it("commits the others of a batch when one is refused, and refuses that one alone", async () => {
    const b = await open();
    const runs = [await runningRun(b), await runningRun(b), await runningRun(b), await runningRun(b)];
    const [first, stale, third, fourth] = runs as [RunRecord, RunRecord, RunRecord, RunRecord];
    const before = await storedState(b, stale.id);
    const outcomes = await Promise.allSettled([
      endRun(b, first),
      endRun(b, { id: stale.id, epoch: stale.epoch + 7 }),
      endRun(b, third),
      endRun(b, fourth),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
    expect(await storedState(b, stale.id)).toStrictEqual(before);
    for (const run of [first, third, fourth]) expect((await b.getRun(run.id))?.state).toBe("COMPLETED");
    const transactions = await transactionsOf([first.id, third.id, fourth.id]);
    expect(new Set(transactions.values()).size).toBe(1);
  });

  it("gives each caller its own outcome when a batch fails as a whole", async () => {
    const b = await open();
    const taken = await runningRun(b);
    const runs = [await runningRun(b), await runningRun(b), await runningRun(b)];
    const [first, clashing, last] = runs as [RunRecord, RunRecord, RunRecord];
    // The successor's id is taken: the batch's insert of it fails, the batch rolls back, and its
    // requests are tried again one transaction each.
    const outcomes = await Promise.allSettled([
      endRun(b, first),
      endRun(b, clashing, "COMPLETED", { successor: runInput({ id: taken.id }) }),
      endRun(b, last),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    const error = await refusal(Promise.reject((outcomes[1] as PromiseRejectedResult).reason));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.message).toContain(taken.id);
    expect((await b.getRun(clashing.id))?.state).toBe("RUNNING");
    expect((await b.getRun(last.id))?.state).toBe("COMPLETED");
    expect((await b.getRun(taken.id))?.state).toBe("RUNNING");
  });

  it("writes the steps that ride with transitions of a batch under each run's fence", async () => {
    const b = await open();
    const runs = [await runningRun(b), await runningRun(b), await runningRun(b)];
    await Promise.all(runs.map((run) => endRun(b, run, "COMPLETED", { steps: [fullStep(run.id, 1, run.epoch)] })));
    for (const run of runs) {
      const steps = await b.loadSteps(run.id);
      expect(steps).toStrictEqual([fullStep(run.id, 1, run.epoch)]);
    }
  });
});

describe("PostgresBackend batches step writes", () => {
  it("writes the steps of runs saved at once in one journal insert, and refuses a stale run's alone", async () => {
    const b = await open();
    const runs = [await runningRun(b), await runningRun(b), await runningRun(b)];
    const [first, stale, last] = runs as [RunRecord, RunRecord, RunRecord];
    const outcomes = await Promise.allSettled(
      runs.map((run) => {
        const epoch = run === stale ? run.epoch + 7 : run.epoch;
        return b.saveSteps([fullStep(run.id, 1, epoch)], { epoch, sync: true });
      }),
    );
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    const error = (outcomes[1] as PromiseRejectedResult).reason;
    expect(error).toBeInstanceOf(LeaseLostError);
    expect((error as Error).message).toBe(
      `run ${stale.id}: step 1 under lease epoch ${stale.epoch + 7} refused, the run is at epoch ${stale.epoch}; this worker lost the run`,
    );
    for (const run of [first, last]) expect(await b.loadSteps(run.id)).toStrictEqual([fullStep(run.id, 1, run.epoch)]);
    expect(await b.loadSteps(stale.id)).toEqual([]);
    // One insert for the batch: the two entries written share a transaction.
    const { rows } = await files.db.query<{ n: number }>(
      `SELECT count(DISTINCT xmin::text)::integer AS n FROM ${pg.escapeIdentifier(b.schema)}.journal`,
    );
    expect(rows[0]?.n).toBe(1);
  });
});

describe("PostgresBackend batches run creation and reads", () => {
  it("writes runs created at once in one transaction, each with its transition and its wake-up", async () => {
    const b = await open();
    const woken: string[] = [];
    const unsubscribe = await b.subscribe((wake) => {
      if (wake.kind === "runnable") woken.push(wake.runId);
    });
    try {
      const inputs = Array.from({ length: 20 }, (_, i) => runInput({ id: `batch-${i}`, at: T0 + i }));
      const created = await Promise.all(inputs.map((input) => b.createRun(input)));
      for (const [i, result] of created.entries()) {
        expect(result.created).toBe(true);
        expect(result.run).toStrictEqual(await b.getRun(`batch-${i}`));
        expect(result.created && result.transition).toStrictEqual((await b.listTransitions(`batch-${i}`))[0]);
      }
      // Asked for in the same turn of the event loop: one statement, one transaction.
      const transactions = await transactionsOf(inputs.map((input) => input.id));
      expect(new Set(transactions.values()).size).toBe(1);
      await until(() => woken.length >= 20);
      expect([...woken].sort()).toEqual(inputs.map((input) => input.id).sort());
    } finally {
      await unsubscribe();
    }
  });

  it("gives each run of a batch its own outcome: created, the run its key names, or a taken id refused", async () => {
    const b = await open();
    const existing = await b.createRun(runInput({ id: "keyed", key: "k-1" }));
    const taken = await b.createRun(runInput({ id: "taken" }));
    const results = await Promise.allSettled([
      b.createRun(runInput({ id: "first" })),
      b.createRun(runInput({ id: "again", key: "k-1" })),
      b.createRun(runInput({ id: "taken", input: { other: true } })),
      b.createRun(runInput({ id: "new-1", key: "k-2" })),
      b.createRun(runInput({ id: "new-2", key: "k-2" })),
      b.createRun(runInput({ id: "last" })),
    ]);
    const values = results.map((r) => (r.status === "fulfilled" ? r.value : r.reason));
    expect(values[0]).toMatchObject({ created: true, run: { id: "first" } });
    expect(values[1]).toStrictEqual({ run: existing.run, created: false });
    expect(values[2]).toBeInstanceOf(InvalidInputError);
    expect((values[2] as Error).message).toContain('run id "taken" already exists');
    expect(values[3]).toMatchObject({ created: true, run: { id: "new-1" } });
    expect(values[4]).toMatchObject({ created: false, run: { id: "new-1" } });
    expect(values[5]).toMatchObject({ created: true, run: { id: "last" } });
    expect(await b.getRun("taken")).toStrictEqual(taken.run);
    expect(await b.getRun("again")).toBeUndefined();
    expect(await b.getRun("new-2")).toBeUndefined();
  });

  it("reads runs asked for at once, missing ones included", async () => {
    const b = await open();
    const runs = await Promise.all(Array.from({ length: 10 }, (_, i) => b.createRun(runInput({ id: `read-${i}` }))));
    const ids = [...runs.map((r) => r.run.id), "missing-1", "read-3", "missing-2"];
    const read = await Promise.all(ids.map((id) => b.getRun(id)));
    expect(read).toStrictEqual([...runs.map((r) => r.run), undefined, runs[3]?.run, undefined]);
  });
});
