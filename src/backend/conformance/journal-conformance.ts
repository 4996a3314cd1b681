import { describe, expect, it } from "vitest";
import { LeaseLostError } from "../../core/errors.ts";
import type { Json, RunRecord, StepRecord } from "../../core/records.ts";
import {
  fullStep,
  LEASE_MS,
  newRun,
  refusal,
  runningRun,
  startedStep,
  T0,
  type UseBackend,
} from "./conformance-fixtures.ts";

/** saveStep and loadSteps. */
export function describeJournal(use: UseBackend): void {
  describeSaveAndLoadSteps(use);
}

/** `saveStep / loadSteps`. */
function describeSaveAndLoadSteps(use: UseBackend): void {
  describe("saveStep / loadSteps", () => {
    stepsRoundTrip(use);
    stepsFenced(use);
    stepsOutOfLine(use);
  });
}

/** `saveSteps` / `loadSteps`: every field kept, each write fenced, seq order. */
function stepsRoundTrip(use: UseBackend): void {
  it("round-trips every field of a step", async () => {
    const run = await runningRun(use());
    const step = fullStep(run.id, 1, run.epoch);
    await use().saveSteps([step], { epoch: run.epoch, sync: true });
    expect(await use().loadSteps(run.id)).toStrictEqual([step]);
  });

  it("keeps undefined fields undefined and null values null", async () => {
    const run = await runningRun(use());
    const started = startedStep(run.id, 1, run.epoch);
    const nulls = { ...startedStep(run.id, 2, run.epoch), args: null, result: null, heartbeat: null };
    await use().saveSteps([started], { epoch: run.epoch, sync: false });
    await use().saveSteps([nulls], { epoch: run.epoch, sync: false });
    const [a, b] = await use().loadSteps(run.id);
    expect(a).toStrictEqual(started);
    expect(b).toStrictEqual(nulls);
    expect(a?.args).toBeUndefined();
    expect(b?.args).toBeNull();
  });

  it("writes of several runs at once each stand or fall by their own fence", async () => {
    const runs = await Promise.all([1, 2, 3, 4].map(() => runningRun(use())));
    const stale = runs[2] as RunRecord;
    const results = await Promise.allSettled(
      runs.map((run) =>
        use().saveSteps([{ ...fullStep(run.id, 1, run.epoch), name: `of ${run.id}` }], {
          epoch: run === stale ? run.epoch - 1 : run.epoch,
          sync: run !== runs[0],
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
    for (const run of runs) {
      const steps = await use().loadSteps(run.id);
      expect(steps.map((s) => s.name)).toEqual(run === stale ? [] : [`of ${run.id}`]);
    }
  });

  it("stamps the step with the writer's epoch", async () => {
    const run = await runningRun(use());
    await use().saveSteps([{ ...fullStep(run.id, 1, 0) }], { epoch: run.epoch, sync: true });
    expect((await use().loadSteps(run.id))[0]?.epoch).toBe(run.epoch);
  });

  it("replaces the step with the same seq", async () => {
    const run = await runningRun(use());
    await use().saveSteps([startedStep(run.id, 1, run.epoch)], { epoch: run.epoch, sync: false });
    const completed = fullStep(run.id, 1, run.epoch);
    await use().saveSteps([completed], { epoch: run.epoch, sync: true });
    expect(await use().loadSteps(run.id)).toStrictEqual([completed]);
  });

  it("loads the steps of one run in seq order", async () => {
    const run = await runningRun(use());
    const other = await runningRun(use());
    for (const seq of [3, 1, 2, 10]) {
      await use().saveSteps([{ ...fullStep(run.id, seq, run.epoch), name: `s${seq}` }], {
        epoch: run.epoch,
        sync: seq % 2 === 0,
      });
    }
    await use().saveSteps([fullStep(other.id, 1, other.epoch)], { epoch: other.epoch, sync: true });
    const steps = await use().loadSteps(run.id);
    expect(steps.map((s) => [s.seq, s.name, s.runId])).toEqual([
      [1, "s1", run.id],
      [2, "s2", run.id],
      [3, "s3", run.id],
      [10, "s10", run.id],
    ]);
    expect(await use().loadSteps("ghost")).toEqual([]);
  });
}

/** `saveSteps`: a stale epoch stores nothing. */
function stepsFenced(use: UseBackend): void {
  it("refuses a stale epoch with LeaseLostError and stores nothing", async () => {
    const b = use();
    const run = await newRun(b);
    const first = (await b.claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS })) as RunRecord;
    const kept = fullStep(run.id, 1, first.epoch);
    await b.saveSteps([kept], { epoch: first.epoch, sync: true });
    const second = (await b.claimRun({ workerId: "w2", now: T0 + LEASE_MS, leaseMs: LEASE_MS })) as RunRecord;
    expect(second.epoch).toBe(first.epoch + 1);
    for (const sync of [true, false]) {
      const overwrite = refusal(b.saveSteps([{ ...kept, status: "failed" }], { epoch: first.epoch, sync }));
      expect(await overwrite).toBeInstanceOf(LeaseLostError);
      const fresh = refusal(b.saveSteps([fullStep(run.id, 2, first.epoch)], { epoch: first.epoch, sync }));
      expect(await fresh).toBeInstanceOf(LeaseLostError);
    }
    const ahead = refusal(
      b.saveSteps([fullStep(run.id, 3, second.epoch + 1)], { epoch: second.epoch + 1, sync: true }),
    );
    expect(await ahead).toBeInstanceOf(LeaseLostError);
    expect(await b.loadSteps(run.id)).toStrictEqual([kept]);
    await b.saveSteps([fullStep(run.id, 2, second.epoch)], { epoch: second.epoch, sync: true });
    expect((await b.loadSteps(run.id)).map((s) => [s.seq, s.epoch])).toEqual([
      [1, first.epoch],
      [2, second.epoch],
    ]);
  });

  it("saves several steps in one call, and a stale epoch stores none of them", async () => {
    const b = use();
    const run = await runningRun(b);
    await b.saveSteps([fullStep(run.id, 1, run.epoch), startedStep(run.id, 2, run.epoch)], {
      epoch: run.epoch,
      sync: true,
    });
    expect((await b.loadSteps(run.id)).map((s) => [s.seq, s.status])).toEqual([
      [1, "completed"],
      [2, "started"],
    ]);
    const refused = refusal(
      b.saveSteps([{ ...fullStep(run.id, 2, run.epoch) }, fullStep(run.id, 3, run.epoch)], {
        epoch: run.epoch + 1,
        sync: true,
      }),
    );
    expect(await refused).toBeInstanceOf(LeaseLostError);
    expect((await b.loadSteps(run.id)).map((s) => [s.seq, s.status])).toEqual([
      [1, "completed"],
      [2, "started"],
    ]);
    await b.saveSteps([], { epoch: run.epoch, sync: true });
    expect(await b.loadSteps(run.id)).toHaveLength(2);
  });
}

/** `saveSteps` / `loadSteps`: large values, look-alikes, unknown runs. */
function stepsOutOfLine(use: UseBackend): void {
  it("round-trips a step with a 1 MB result and arguments, and saves it again unchanged", async () => {
    const b = use();
    const run = await runningRun(b);
    const started = { ...startedStep(run.id, 1, run.epoch), args: largeJson("args", 1_000_000) };
    await b.saveSteps([started], { epoch: run.epoch, sync: false });
    expect(await b.loadSteps(run.id)).toStrictEqual([started]);
    const completed: StepRecord = {
      ...fullStep(run.id, 1, run.epoch),
      args: started.args,
      result: largeJson("result", 1_000_000),
    };
    await b.saveSteps([completed], { epoch: run.epoch, sync: true });
    await b.saveSteps([completed], { epoch: run.epoch, sync: true });
    // A second step with the same large result, in one call with a small one.
    const same = { ...fullStep(run.id, 2, run.epoch), result: completed.result };
    await b.saveSteps([same, fullStep(run.id, 3, run.epoch)], { epoch: run.epoch, sync: true });
    const loaded = await b.loadSteps(run.id);
    expect(loaded).toStrictEqual([completed, same, fullStep(run.id, 3, run.epoch)]);
    // Key order and text survive as written.
    expect(JSON.stringify(loaded[0]?.result)).toBe(JSON.stringify(completed.result));
  });

  it("stores nothing of a large step whose epoch is stale", async () => {
    const b = use();
    const run = await runningRun(b);
    const large = { ...fullStep(run.id, 1, run.epoch), result: largeJson("stale", 400_000) };
    expect(await refusal(b.saveSteps([large], { epoch: run.epoch + 1, sync: true }))).toBeInstanceOf(LeaseLostError);
    expect(await b.loadSteps(run.id)).toEqual([]);
  });

  it("keeps a small value that looks like an out-of-line reference as the value it is", async () => {
    const run = await runningRun(use());
    const lookalike = { $cairnBlob: `sha256:${"0".repeat(64)}`, bytes: 3 };
    const step = { ...fullStep(run.id, 1, run.epoch), args: lookalike, result: [lookalike] };
    await use().saveSteps([step], { epoch: run.epoch, sync: true });
    expect(await use().loadSteps(run.id)).toStrictEqual([step]);
  });

  it("refuses a step of an unknown run with LeaseLostError", async () => {
    const error = await refusal(use().saveSteps([fullStep("ghost", 1, 1)], { epoch: 1, sync: true }));
    expect(error).toBeInstanceOf(LeaseLostError);
    expect(await use().loadSteps("ghost")).toEqual([]);
  });
}

/**
 * A JSON value of about `bytes` bytes of text, with keys out of alphabetical order, multi-byte
 * characters, escapes and numbers, different for each `seed`.
 */
export function largeJson(seed: string, bytes: number): Json {
  const rows: Json[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const row = {
      z: i,
      a: `${seed} row ${i} — café ✓ "quoted" \\ 🚀`,
      m: [i / 7, null, true],
      n: { y: -(i + 1), b: "" },
    };
    size += JSON.stringify(row).length + 1;
    rows.push(row);
  }
  return { seed, rows, count: rows.length };
}
