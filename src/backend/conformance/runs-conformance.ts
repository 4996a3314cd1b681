import { describe, expect, it } from "vitest";
import type { RunRecord } from "../../core/records.ts";
import {
  LEASE_MS,
  move,
  newRun,
  runInput,
  runningRun,
  T0,
  USER,
  type UseBackend,
  VERSIONS,
} from "./conformance-fixtures.ts";

/** createRun, getRun and listRuns. */
export function describeRuns(use: UseBackend): void {
  describeCreateRun(use);
  describeGetRun(use);
  describeListRuns(use);
  describeCountRuns(use);
}

/** `countRuns` (optional in the contract; every built-in backend has it). */
function describeCountRuns(use: UseBackend): void {
  describe("countRuns", () => {
    it("counts runs per state and the backlog: runnable, with no live lease", async () => {
      const backend = use();
      if (!backend.countRuns) return;
      expect(await backend.countRuns(T0)).toEqual({ states: [], backlog: 0 });
      await newRun(backend, { at: T0 });
      await newRun(backend, { at: T0 });
      await runningRun(backend);
      const claimedOnly = await newRun(backend, { at: T0 });
      await backend.claimRun({ runId: claimedOnly.id, workerId: "w-claim", now: T0, leaseMs: LEASE_MS });
      const now = await backend.countRuns(T0 + 1);
      const sorted = [...now.states].sort((a, b) => a.state.localeCompare(b.state));
      expect(sorted).toEqual([
        { state: "PENDING", pausedReason: null, count: 3 },
        { state: "RUNNING", pausedReason: null, count: 1 },
      ]);
      // The claimed PENDING run is not backlog while its lease lives; it is once the lease lapsed.
      expect(now.backlog).toBe(2);
      expect((await backend.countRuns(T0 + LEASE_MS + 1)).backlog).toBe(3);
    });
  });
}

/** `createRun`. */
function describeCreateRun(use: UseBackend): void {
  describe("createRun", () => {
    createRunWrites(use);
    createRunByKey(use);
  });
}

/** `createRun` of a new run: the run and its first transition. */
function createRunWrites(use: UseBackend): void {
  it("creates a PENDING run with every field set", async () => {
    const input = runInput({ key: "k-1" });
    const { run, created } = await use().createRun(input);
    expect(created).toBe(true);
    const expected: RunRecord = {
      id: input.id,
      agent: "report_builder",
      workflow: "build",
      key: "k-1",
      state: "PENDING",
      pausedReason: null,
      input: input.input,
      output: undefined,
      error: undefined,
      epoch: 0,
      leaseOwner: null,
      leaseExpiresAt: null,
      recoveries: 0,
      lastTransitionId: 1,
      versions: VERSIONS,
      meta: { module: "examples/report-builder.ts" },
      parentRunId: null,
      parentClosePolicy: null,
      stopRequest: undefined,
      continuedFrom: null,
      continuedTo: null,
      usage: undefined,
      acceptance: undefined,
      createdAt: T0,
      updatedAt: T0,
    };
    expect(run).toStrictEqual(expected);
    expect(await use().getRun(input.id)).toStrictEqual(expected);
  });

  it("writes transition 1 from null to PENDING, and returns it", async () => {
    const input = runInput({ reason: "admitted by api" });
    const created = await use().createRun(input);
    expect(created.created && created.transition).toStrictEqual((await use().listTransitions(input.id))[0]);
    expect(await use().listTransitions(input.id)).toStrictEqual([
      {
        runId: input.id,
        id: 1,
        at: T0,
        actor: USER,
        from: null,
        to: "PENDING",
        pausedReason: null,
        reason: "admitted by api",
        versions: VERSIONS,
      },
    ]);
  });
}

/** `createRun` with a key: the run it names, kept apart per agent and workflow. */
function createRunByKey(use: UseBackend): void {
  it("returns the existing run for a known (agent, workflow, key), untouched", async () => {
    const first = await newRun(use(), { key: "same" });
    const again = await use().createRun(runInput({ key: "same", input: { other: true }, at: T0 + 5 }));
    expect(again.created).toBe(false);
    expect(again.run).toStrictEqual(first);
    expect(await use().listRuns()).toHaveLength(1);
    expect(await use().listTransitions(first.id)).toHaveLength(1);
  });

  it("returns the existing run as it is now, not as it was created", async () => {
    const running = await runningRun(use(), { overrides: { key: "busy" } });
    const again = await use().createRun(runInput({ key: "busy" }));
    expect(again.created).toBe(false);
    expect(again.run.state).toBe("RUNNING");
    expect(again.run.epoch).toBe(1);
    expect(again.run).toStrictEqual(running);
  });

  it("keeps keys separate per agent and per workflow", async () => {
    const a = await newRun(use(), { key: "k" });
    const b = await newRun(use(), { key: "k", workflow: "other_workflow" });
    const c = await newRun(use(), { key: "k", agent: "other_agent" });
    expect(new Set([a.id, b.id, c.id]).size).toBe(3);
    expect(await use().listRuns()).toHaveLength(3);
    const again = await use().createRun(runInput({ key: "k", workflow: "other_workflow" }));
    expect(again).toMatchObject({ created: false, run: { id: b.id } });
  });

  it("never deduplicates runs without a key", async () => {
    await newRun(use(), { key: null });
    await newRun(use(), { key: null });
    expect(await use().listRuns()).toHaveLength(2);
  });
}

/** `getRun`. */
function describeGetRun(use: UseBackend): void {
  describe("getRun", () => {
    it("returns undefined for an unknown id", async () => {
      expect(await use().getRun("no-such-run")).toBeUndefined();
    });
  });
}

/** `listRuns`. */
function describeListRuns(use: UseBackend): void {
  describe("listRuns", () => {
    async function seed() {
      const b = use();
      const r1 = await newRun(b, { agent: "a1", workflow: "w1", at: T0 + 1 });
      const r2 = await newRun(b, { agent: "a1", workflow: "w2", at: T0 + 2 });
      const r3 = await newRun(b, { agent: "a2", workflow: "w1", at: T0 + 3 });
      const r4 = await newRun(b, { agent: "a2", workflow: "w2", at: T0 + 4 });
      // r3 -> CANCELLED, r4 -> RUNNING
      await b.transition(move(r3, "PENDING", "CANCELLED", { fence: { unowned: true, now: T0 + 10 } }));
      const claimed = await b.claimRun({ workerId: "w1", now: T0 + 10, leaseMs: LEASE_MS, runId: r4.id });
      await b.transition(move(claimed as RunRecord, "PENDING", "RUNNING"));
      return [r1.id, r2.id, r3.id, r4.id] as const;
    }
    const ids = (runs: RunRecord[]) => runs.map((r) => r.id);

    it("lists newest first", async () => {
      const [r1, r2, r3, r4] = await seed();
      expect(ids(await use().listRuns())).toEqual([r4, r3, r2, r1]);
      expect(ids(await use().listRuns({}))).toEqual([r4, r3, r2, r1]);
    });

    it("returns runs as stored", async () => {
      const [, , r3] = await seed();
      const listed = (await use().listRuns()).find((r) => r.id === r3);
      expect(listed).toStrictEqual(await use().getRun(r3));
      expect(listed?.state).toBe("CANCELLED");
    });

    it("filters by agent and by workflow", async () => {
      const [r1, r2, r3, r4] = await seed();
      expect(ids(await use().listRuns({ agent: "a1" }))).toEqual([r2, r1]);
      expect(ids(await use().listRuns({ workflow: "w1" }))).toEqual([r3, r1]);
      expect(ids(await use().listRuns({ agent: "a2", workflow: "w2" }))).toEqual([r4]);
      expect(await use().listRuns({ agent: "nobody" })).toEqual([]);
    });

    it("filters by one state or several", async () => {
      const [r1, r2, r3, r4] = await seed();
      expect(ids(await use().listRuns({ state: "PENDING" }))).toEqual([r2, r1]);
      expect(ids(await use().listRuns({ state: ["CANCELLED", "RUNNING"] }))).toEqual([r4, r3]);
      expect(ids(await use().listRuns({ state: ["RUNNING"], agent: "a1" }))).toEqual([]);
      expect(await use().listRuns({ state: [] })).toEqual([]);
    });

    it("pages with limit and offset", async () => {
      const [r1, r2, r3, r4] = await seed();
      expect(ids(await use().listRuns({ limit: 2 }))).toEqual([r4, r3]);
      expect(ids(await use().listRuns({ limit: 2, offset: 2 }))).toEqual([r2, r1]);
      expect(ids(await use().listRuns({ offset: 3 }))).toEqual([r1]);
      expect(await use().listRuns({ offset: 4 })).toEqual([]);
    });

    it("returns at most 100 runs by default", async () => {
      for (let i = 0; i < 101; i++) await newRun(use(), { at: T0 + i });
      const runs = await use().listRuns();
      expect(runs).toHaveLength(100);
      expect(runs[0]?.createdAt).toBe(T0 + 100);
      expect(runs[99]?.createdAt).toBe(T0 + 1);
    });
  });
}
