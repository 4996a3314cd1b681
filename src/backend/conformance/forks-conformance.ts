import { describe, expect, it } from "vitest";
import { InvalidInputError, RunNotFoundError } from "../../core/errors.ts";
import type { ForkOrigin, RunRecord, StepRecord } from "../../core/records.ts";
import type { ForkRunRequest } from "../contract/fork-store.ts";
import {
  effectRecord,
  fullStep,
  refusal,
  runId,
  runInput,
  runningRun,
  T0,
  USER,
  type UseBackend,
} from "./conformance-fixtures.ts";

/** `forkRun`: the fork, its journal and its lineage both ways, in one transaction. */
export function describeForks(use: UseBackend): void {
  describe("forkRun", () => {
    forkWritten(use);
    forkRefused(use);
  });
}

/** A fork of `source` from step `fromStep` with `steps` copied (stamped with the fork's id). */
function forkRequest(
  source: RunRecord,
  fromStep: number,
  steps: readonly StepRecord[],
  id = runId("fork"),
): ForkRunRequest {
  const forkedFrom: ForkOrigin = { runId: source.id, fromStep, kind: "fork", by: USER, at: T0 + 5_000 };
  return {
    run: runInput({
      id,
      input: { quarter: "2026-Q4" },
      reason: `forked from run ${source.id} at step ${fromStep}`,
      at: T0 + 5_000,
    }),
    forkedFrom,
    steps: steps.map((s) => ({ ...s, runId: id, epoch: 0 })),
  };
}

/** Source steps 1–3: a completed tool, an applied effect, a completed tool; with a large result on 3. */
async function sourceWithSteps(use: UseBackend): Promise<{ source: RunRecord; steps: StepRecord[] }> {
  const source = await runningRun(use());
  const effect = { ...fullStep(source.id, 2, source.epoch), name: "charge", effect: effectRecord(2) };
  const big = { ...fullStep(source.id, 3, source.epoch), result: { text: "x".repeat(300_000) } };
  const steps = [fullStep(source.id, 1, source.epoch), effect, big];
  await use().saveSteps(steps, { epoch: source.epoch, sync: true });
  return { source, steps };
}

function forkWritten(use: UseBackend): void {
  it("creates the fork PENDING with its journal, and records the lineage both ways", async () => {
    const { source, steps } = await sourceWithSteps(use);
    const request = forkRequest(source, 4, steps);
    const result = await use().forkRun(request);
    const forkId = request.run.id;
    expect(result.run).toMatchObject({ id: forkId, state: "PENDING", epoch: 0, key: null, lastTransitionId: 1 });
    expect(result.run.forkedFrom).toEqual(request.forkedFrom);
    expect(result.transition).toMatchObject({ runId: forkId, id: 1, from: null, to: "PENDING" });
    const stored = (await use().getRun(forkId)) as RunRecord;
    expect(stored.forkedFrom).toEqual(request.forkedFrom);
    expect(stored.input).toEqual({ quarter: "2026-Q4" });
    expect(await use().listTransitions(forkId)).toEqual([result.transition]);
    // The journal: the copied steps as given (the effect's record and receipt kept), at epoch 0.
    expect(await use().loadSteps(forkId)).toStrictEqual(request.steps);
    // The source: its journal untouched, the fork listed.
    expect(await use().loadSteps(source.id)).toStrictEqual(steps);
    const after = (await use().getRun(source.id)) as RunRecord;
    expect(after.forks).toEqual([{ runId: forkId, fromStep: 4, kind: "fork", at: T0 + 5_000 }]);
    expect(after.state).toBe("RUNNING");
    expect(after.epoch).toBe(source.epoch);
  });

  it("lists every fork of a run oldest first, and a fork can be forked", async () => {
    const { source, steps } = await sourceWithSteps(use);
    const first = await use().forkRun(forkRequest(source, 2, steps.slice(0, 1)));
    const second = await use().forkRun(forkRequest(source, 1, []));
    const third = await use().forkRun(forkRequest(first.run, 1, []));
    const forks = (await use().getRun(source.id))?.forks?.map((f) => [f.runId, f.fromStep]);
    expect(forks).toEqual([
      [first.run.id, 2],
      [second.run.id, 1],
    ]);
    expect(await use().loadSteps(second.run.id)).toEqual([]);
    expect((await use().getRun(first.run.id))?.forks?.map((f) => f.runId)).toEqual([third.run.id]);
    expect((await use().getRun(third.run.id))?.forkedFrom?.runId).toBe(first.run.id);
  });

  it("a fork is claimable like a new run, and its copied steps are fenced by its own epochs", async () => {
    const { source, steps } = await sourceWithSteps(use);
    const { run } = await use().forkRun(forkRequest(source, 3, steps.slice(0, 2)));
    const claimed = await use().claimRun({ workerId: "w9", now: T0 + 6_000, leaseMs: 30_000, runId: run.id });
    expect(claimed?.epoch).toBe(1);
    const next = { ...fullStep(run.id, 3, 1), name: "after_fork" };
    await use().saveSteps([next], { epoch: 1, sync: true });
    expect((await use().loadSteps(run.id)).map((s) => [s.seq, s.name])).toEqual([
      [1, "fetch_data"],
      [2, "charge"],
      [3, "after_fork"],
    ]);
  });
}

function forkRefused(use: UseBackend): void {
  it("refuses an unknown source, a key, a step of another run and a taken id, writing nothing", async () => {
    const { source, steps } = await sourceWithSteps(use);
    const unknown = forkRequest({ ...source, id: "no-such-run" }, 1, []);
    expect(await refusal(use().forkRun(unknown))).toBeInstanceOf(RunNotFoundError);
    expect(await use().getRun(unknown.run.id)).toBeUndefined();
    const keyed = forkRequest(source, 1, []);
    keyed.run = { ...keyed.run, key: "k-1" };
    expect(await refusal(use().forkRun(keyed))).toBeInstanceOf(InvalidInputError);
    const stray = forkRequest(source, 2, []);
    stray.steps = [steps[0] as StepRecord];
    expect(await refusal(use().forkRun(stray))).toBeInstanceOf(InvalidInputError);
    const taken = forkRequest(source, 2, steps.slice(0, 1), source.id);
    expect(await refusal(use().forkRun(taken))).toBeInstanceOf(InvalidInputError);
    for (const request of [keyed, stray]) expect(await use().getRun(request.run.id)).toBeUndefined();
    expect((await use().getRun(source.id))?.forks ?? []).toEqual([]);
    expect(await use().loadSteps(source.id)).toStrictEqual(steps);
  });
}
