import { describe, expect, it } from "vitest";
import { IllegalTransitionError, ImportConflictError } from "../../core/errors.ts";
import type { RunRecord, StepRecord, TransitionRecord, WaitRecord } from "../../core/records.ts";
import type { ImportRunInput } from "../contract/import-store.ts";
import {
  fullStep,
  intendedEffect,
  LEASE_MS,
  newRun,
  refusal,
  runId,
  storedState,
  T0,
  USER,
  type UseBackend,
  VERSIONS,
  WORKER,
  waitRecord,
} from "./conformance-fixtures.ts";

/** A PAUSED run as an export holds it: three transitions, two steps, a resolved and an open wait, a signal. */
function pausedImport(overrides: Partial<RunRecord> = {}): ImportRunInput {
  const id = overrides.id ?? runId("imported");
  const run: RunRecord = {
    id,
    agent: "report_builder",
    workflow: "build",
    key: null,
    state: "PAUSED",
    pausedReason: "awaiting_approval",
    input: { quarter: "2026-Q3" },
    output: undefined,
    error: undefined,
    epoch: 3,
    leaseOwner: null,
    leaseExpiresAt: null,
    recoveries: 1,
    lastTransitionId: 3,
    versions: VERSIONS,
    meta: { job: { owner: "ops" } },
    parentRunId: null,
    parentClosePolicy: null,
    stopRequest: undefined,
    continuedFrom: null,
    continuedTo: null,
    usage: undefined,
    acceptance: undefined,
    createdAt: T0,
    updatedAt: T0 + 300,
    ...overrides,
  };
  const t = (n: number, from: TransitionRecord["from"], to: TransitionRecord["to"], extra = {}): TransitionRecord => ({
    runId: id,
    id: n,
    at: T0 + n * 100,
    actor: n === 1 ? USER : WORKER,
    from,
    to,
    pausedReason: null,
    reason: `${from} -> ${to}`,
    versions: VERSIONS,
    ...extra,
  });
  const effectStep: StepRecord = { ...fullStep(id, 2, 1), error: undefined, effect: intendedEffect(2) };
  return {
    run,
    transitions: [
      t(1, null, "PENDING"),
      t(2, "PENDING", "RUNNING"),
      t(3, "RUNNING", "PAUSED", { pausedReason: "awaiting_approval" }),
    ],
    steps: [fullStep(id, 1, 2), effectStep],
    waits: [
      waitRecord(id, 3, {
        kind: "timer",
        name: "sleep",
        status: "resolved",
        resolution: { outcome: "fired", at: T0 + 250 },
      }),
      waitRecord(id, 4, { kind: "approval", name: "pay", details: { action: "pay", approvers: ["bob"] } }),
    ],
    signals: [{ runId: id, messageId: "m1", name: "later", payload: { n: 1 }, receivedAt: T0 + 260, consumedBy: null }],
  };
}

/** `importRun`: a whole run written at once, a second import a no-op, refusals that store nothing. */
export function describeImports(use: UseBackend): void {
  describe("importRun", () => {
    describeImportWrites(use);
    describeImportFences(use);
  });
}

/** What an import writes, and how the run continues from it. */
function describeImportWrites(use: UseBackend): void {
  it("writes the run, its transitions, steps, waits and signals as given, without a lease", async () => {
    const b = use();
    const input = pausedImport();
    const result = await b.importRun(input);
    expect(result.created).toBe(true);
    const stored = await storedState(b, input.run.id);
    expect(stored.run).toEqual({ ...input.run });
    expect(stored.transitions).toEqual(input.transitions);
    expect(stored.waits).toEqual(input.waits);
    expect(stored.signals).toEqual(input.signals);
    // Steps keep everything but their epoch, which is the run's (the store's own fence).
    expect(await b.loadSteps(input.run.id)).toEqual(input.steps.map((s) => ({ ...s, epoch: 3 })));
  });

  it("continues from where the run was: a resolved wait resumes it, a claim takes the next epoch", async () => {
    const b = use();
    const input = pausedImport();
    await b.importRun(input);
    expect(await b.claimRun({ workerId: "w2", now: T0 + 1_000, leaseMs: LEASE_MS, runId: input.run.id })).toBe(
      undefined,
    );
    const resolved = await b.resolveWait({
      runId: input.run.id,
      waitId: "w4",
      decide: () => ({ outcome: "approved", by: USER }),
      actor: USER,
      reason: "approved",
      versions: VERSIONS,
      at: T0 + 2_000,
    });
    expect(resolved.run.state).toBe("RESUMING");
    const claimed = await b.claimRun({ workerId: "w2", now: T0 + 2_000, leaseMs: LEASE_MS, runId: input.run.id });
    expect(claimed?.epoch).toBe(4);
    const ids = (await b.listTransitions(input.run.id)).map((t) => t.id);
    expect(ids).toEqual([1, 2, 3, 4]);
  });

  it("returns the run its id names without writing anything (a second import)", async () => {
    const b = use();
    const input = pausedImport();
    await b.importRun(input);
    const again = await b.importRun({ ...input, transitions: input.transitions.slice(0, 1) });
    expect(again).toEqual({ run: input.run, created: false });
    expect(await b.listTransitions(input.run.id)).toHaveLength(3);
  });
}

/** What an import and a move refuse. */
function describeImportFences(use: UseBackend): void {
  it("moves a run out only as last seen: MOVED closes its waits; another last transition is refused", async () => {
    const b = use();
    const input = pausedImport();
    await b.importRun(input);
    const move = (expectLastTransitionId: number) =>
      b.transition({
        runId: input.run.id,
        from: "PAUSED",
        to: "MOVED",
        actor: USER,
        reason: "moved",
        versions: VERSIONS,
        at: T0 + 5_000,
        fence: { unowned: true, now: T0 + 5_000 },
        expectLastTransitionId,
        patch: { releaseLease: true },
      });
    expect(await refusal(move(2))).toBeInstanceOf(IllegalTransitionError);
    expect((await b.getRun(input.run.id))?.state).toBe("PAUSED");
    const { run } = await move(3);
    expect(run.state).toBe("MOVED");
    const waits = await b.loadWaits(input.run.id);
    expect(waits.find((w) => w.id === "w4")?.status).toBe("closed");
    expect(await b.claimRun({ workerId: "w9", now: T0 + 6_000, leaseMs: LEASE_MS, runId: input.run.id })).toBe(
      undefined,
    );
  });

  it("refuses a key that names another run, and a record with a gap, storing nothing", async () => {
    const b = use();
    const other = await newRun(b, { key: "order-7" });
    const keyed = pausedImport({ key: "order-7" });
    expect(await refusal(b.importRun(keyed))).toBeInstanceOf(ImportConflictError);
    expect((await storedState(b, keyed.run.id)).run).toBeUndefined();
    expect((await b.getRun(other.id))?.state).toBe("PENDING");
    const gap = pausedImport();
    const holed = { ...gap, transitions: [gap.transitions[0], gap.transitions[2]] as TransitionRecord[] };
    expect(await refusal(b.importRun(holed))).toBeInstanceOf(ImportConflictError);
    const stored = await storedState(b, gap.run.id);
    expect(stored.run).toBeUndefined();
    expect(stored.transitions).toEqual([]);
    expect(await b.loadWaits(gap.run.id)).toEqual([] as WaitRecord[]);
  });
}
