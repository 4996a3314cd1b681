import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../core/errors.ts";
import type { RunRecord } from "../../core/records.ts";
import type { RuntimeBackend } from "../backend.ts";
import {
  endRun,
  newRun,
  pausedRun,
  refusal,
  runId,
  runningRun,
  storedState,
  T0,
  USER,
  type UseBackend,
} from "./conformance-fixtures.ts";
import { endedImport, pruneRequest } from "./prune-fixtures.ts";

/** `pruneRuns`: ended runs deleted with what they own, in bounded batches; open runs and their relatives kept. */
export function describePrune(use: UseBackend): void {
  describe("pruneRuns", () => {
    pruneDeletes(use);
    pruneKeeps(use);
    pruneBatches(use);
    pruneTrees(use);
    pruneLineage(use);
  });
}

/** Everything a backend holds of a run, through the contract: empty once pruned. */
async function owned(b: RuntimeBackend, id: string) {
  return { ...(await storedState(b, id)), steps: await b.loadSteps(id) };
}

const GONE = { run: undefined, transitions: [], waits: [], signals: [], steps: [] };

async function imported(b: RuntimeBackend, ...args: Parameters<typeof endedImport>): Promise<RunRecord> {
  return (await b.importRun(endedImport(...args))).run;
}

function pruneDeletes(use: UseBackend): void {
  it("deletes a run that ended before the cutoff with its transitions, steps, waits and signals", async () => {
    const b = use();
    const done = await imported(b, { endedAt: T0 + 400 });
    const failed = await imported(b, { state: "FAILED", endedAt: T0 + 400 });
    const { run: plain } = await endRun(b, await runningRun(b));
    expect((await owned(b, done.id)).steps).toHaveLength(3);
    const result = await b.pruneRuns(pruneRequest({ endedBefore: T0 + 5_000 }));
    expect(result.runIds).toStrictEqual([done.id, failed.id, plain.id].sort());
    for (const id of result.runIds) expect(await owned(b, id)).toStrictEqual(GONE);
    expect(await b.listRuns({})).toStrictEqual([]);
    expect((await b.pruneRuns(pruneRequest())).runIds).toStrictEqual([]);
  });

  it("frees a run's key, and keeps a payload another run still holds", async () => {
    const b = use();
    const keyed = await imported(b, { run: { key: "q3" }, bigResult: "shared ".repeat(50_000) });
    const other = await imported(b, { endedAt: T0 + 9_000, bigResult: "shared ".repeat(50_000) });
    const expected = await b.loadSteps(other.id);
    expect((await b.pruneRuns(pruneRequest({ endedBefore: T0 + 5_000 }))).runIds).toStrictEqual([keyed.id]);
    expect(await b.loadSteps(other.id)).toStrictEqual(expected);
    const again = await b.createRun({
      ...{ id: runId(), agent: keyed.agent, workflow: keyed.workflow, key: "q3", input: {} },
      ...{ versions: keyed.versions, meta: {}, actor: USER, reason: "again", at: T0 + 10_000 },
    });
    expect(again.created).toBe(true);
  });
}

function pruneKeeps(use: UseBackend): void {
  it("never takes an open run, one that ended at or after the cutoff, another state or agent", async () => {
    const b = use();
    const pending = await newRun(b);
    const running = await runningRun(b);
    const { run: paused } = await pausedRun(b, [{ seq: 1 }]);
    const late = await imported(b, { endedAt: T0 + 5_000 });
    const failed = await imported(b, { state: "FAILED" });
    const otherAgent = await imported(b, { run: { agent: "other" } });
    const interrupted = await imported(b, { state: "INTERRUPTED" });
    const before = await Promise.all([pending, running, paused].map((r) => owned(b, r.id)));
    const request = pruneRequest({ endedBefore: T0 + 5_000, states: ["COMPLETED"], agent: "report_builder" });
    expect((await b.pruneRuns({ ...request, dryRun: true })).runIds).toStrictEqual([]);
    expect((await b.pruneRuns(request)).runIds).toStrictEqual([]);
    expect(await Promise.all([pending, running, paused].map((r) => owned(b, r.id)))).toStrictEqual(before);
    for (const run of [late, failed, otherAgent, interrupted]) expect(await b.getRun(run.id)).toBeDefined();
    const everything = pruneRequest({ states: ["COMPLETED", "FAILED", "INTERRUPTED"], agent: "report_builder" });
    const ids = [late.id, failed.id, interrupted.id].sort();
    expect((await b.pruneRuns(everything)).runIds).toStrictEqual(ids);
    expect((await b.listRuns({})).map((r) => r.id).sort()).toStrictEqual(
      [pending.id, running.id, paused.id, otherAgent.id].sort(),
    );
  });

  it("refuses an open state, a limit under 1 and a cutoff that is no time, deleting nothing", async () => {
    const b = use();
    const done = await imported(b);
    for (const bad of [
      pruneRequest({ states: ["COMPLETED", "RUNNING"] }),
      pruneRequest({ limit: 0 }),
      pruneRequest({ endedBefore: Number.NaN }),
    ]) {
      expect(await refusal(b.pruneRuns(bad))).toBeInstanceOf(InvalidInputError);
    }
    expect(await b.getRun(done.id)).toBeDefined();
  });
}

function pruneBatches(use: UseBackend): void {
  it("takes at most the limit per call; a dry run lists in id order, page by page, and deletes nothing", async () => {
    const b = use();
    const runs = await Promise.all([1, 2, 3, 4, 5].map(() => imported(b)));
    const ids = runs.map((r) => r.id).sort();
    const first = await b.pruneRuns(pruneRequest({ limit: 2, dryRun: true }));
    const second = await b.pruneRuns(pruneRequest({ limit: 2, dryRun: true, after: first.runIds.at(-1) as string }));
    expect([...first.runIds, ...second.runIds]).toStrictEqual(ids.slice(0, 4));
    expect(await b.listRuns({})).toHaveLength(5);
    const taken: string[] = [];
    for (const size of [2, 2, 1, 0]) {
      const { runIds } = await b.pruneRuns(pruneRequest({ limit: 2 }));
      expect(runIds).toHaveLength(size);
      expect(runIds).toStrictEqual([...runIds].sort());
      taken.push(...runIds);
    }
    expect(taken.sort()).toStrictEqual(ids);
  });
}

function pruneTrees(use: UseBackend): void {
  it("keeps an ended run while its parent or a child is open, and takes the tree once all of it ended", async () => {
    const b = use();
    const parent = await runningRun(b);
    const child = await imported(b, { run: { parentRunId: parent.id, parentClosePolicy: "cancel" } });
    const oldParent = await imported(b);
    const openChild = await runningRun(b, { overrides: { parentRunId: oldParent.id } });
    expect((await b.pruneRuns(pruneRequest())).runIds).toStrictEqual([]);
    await endRun(b, parent);
    await endRun(b, openChild);
    const all = [parent.id, child.id, oldParent.id, openChild.id].sort();
    expect((await b.pruneRuns(pruneRequest())).runIds).toStrictEqual(all);
  });
}

/**
 * The runs of the feed's transitions after `after`, once it shows `count` of them (PostgreSQL
 * shows a transition once older transactions have ended), within 10 s.
 */
async function feedRuns(b: RuntimeBackend, after: string | null, count: number): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const page = await (b.listTransitionsSince as NonNullable<typeof b.listTransitionsSince>)({ after, limit: 100 });
    if (page.transitions.length >= count || Date.now() > deadline)
      return page.transitions.map((e) => e.transition.runId);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function pruneLineage(use: UseBackend): void {
  it("leaves a fork readable when its source is pruned", async () => {
    const b = use();
    const source = await imported(b);
    const steps = (await b.loadSteps(source.id)).slice(0, 1);
    const forkId = runId("fork");
    const forkedFrom = { runId: source.id, fromStep: 2, kind: "fork" as const, by: USER, at: T0 + 5_000 };
    await b.forkRun({
      run: {
        ...({ id: forkId, agent: source.agent, workflow: source.workflow, key: null, input: {} } as const),
        ...{ versions: source.versions, meta: {}, actor: USER, reason: "fork", at: T0 + 5_000 },
      },
      forkedFrom,
      steps: steps.map((s) => ({ ...s, runId: forkId, epoch: 0 })),
    });
    expect((await b.pruneRuns(pruneRequest())).runIds).toStrictEqual([source.id]);
    const fork = await b.getRun(forkId);
    expect(fork?.forkedFrom).toStrictEqual(forkedFrom);
    expect(await b.loadSteps(forkId)).toHaveLength(1);
    expect(await b.getRun(source.id)).toBeUndefined();
  });

  it("leaves the feed without the pruned transitions, and gives no cursor twice after them", async () => {
    const b = use();
    if (!(b.listTransitionsSince && b.latestTransitionCursor)) return;
    const kept = await newRun(b);
    const pruned = await imported(b);
    const latest = await b.latestTransitionCursor();
    expect((await b.pruneRuns(pruneRequest())).runIds).toStrictEqual([pruned.id]);
    expect(await feedRuns(b, null, 1)).toStrictEqual([kept.id]);
    const next = await newRun(b);
    expect(await feedRuns(b, latest, 1)).toStrictEqual([next.id]);
  });
}
