import type { RunRecord, StepRecord, TransitionRecord } from "../../core/records.ts";
import type { RunState } from "../../core/run-state.ts";
import type { ImportRunInput } from "../contract/import-store.ts";
import type { PruneRunsRequest } from "../contract/prune-store.ts";
import {
  effectRecord,
  fullStep,
  runId,
  runUsage,
  T0,
  USER,
  VERSIONS,
  WORKER,
  waitRecord,
} from "./conformance-fixtures.ts";

/** Every terminal state but INTERRUPTED: what `Runtime.prune` takes unless told otherwise. */
export const ENDED: readonly RunState[] = ["COMPLETED", "FAILED", "BLOCKED", "CANCELLED", "COMPENSATED", "MOVED"];

/** A prune request with defaults: every ended state, a cutoff far ahead, a batch of 100. */
export function pruneRequest(extra: Partial<PruneRunsRequest> = {}): PruneRunsRequest {
  return { endedBefore: T0 + 1_000_000, states: ENDED, limit: 100, ...extra };
}

/**
 * An ended run as an export holds it, with a row in every table a run owns: four transitions (the
 * last at `endedAt`), a step, an applied effect and a step whose result is stored out of line
 * (`bigResult`, shared by whoever passes the same text), a resolved approval and timer, a consumed
 * signal, usage and an operator's verdict.
 */
export function endedImport(
  options: { id?: string; state?: RunState; endedAt?: number; bigResult?: string; run?: Partial<RunRecord> } = {},
): ImportRunInput {
  const id = options.id ?? runId("ended");
  const state = options.state ?? "COMPLETED";
  const endedAt = options.endedAt ?? T0 + 400;
  const run: RunRecord = {
    ...{ id, agent: "report_builder", workflow: "build", key: null, state, pausedReason: null },
    ...{ input: { quarter: "2026-Q3" }, output: state === "COMPLETED" ? { done: true } : undefined, error: undefined },
    ...{ epoch: 1, leaseOwner: null, leaseExpiresAt: null, recoveries: 0, lastTransitionId: 4, versions: VERSIONS },
    ...{ meta: {}, parentRunId: null, parentClosePolicy: null, stopRequest: undefined },
    ...{ continuedFrom: null, continuedTo: null, usage: runUsage(), createdAt: T0, updatedAt: endedAt },
    acceptance: { decision: "accepted", by: USER, note: "fine", at: endedAt + 10 },
    ...options.run,
  };
  const t = (n: number, from: RunState | null, to: RunState, at: number): TransitionRecord => ({
    ...{ runId: id, id: n, at, actor: n === 1 ? USER : WORKER, from, to },
    ...{ pausedReason: to === "PAUSED" ? "awaiting_approval" : null, reason: `${from} -> ${to}`, versions: VERSIONS },
  });
  const big = options.bigResult ?? "x".repeat(300_000);
  const steps: StepRecord[] = [
    { ...fullStep(id, 1, 1), error: undefined },
    { ...fullStep(id, 2, 1), name: "charge", error: undefined, effect: effectRecord(2) },
    { ...fullStep(id, 3, 1), error: undefined, result: { text: big } },
  ];
  return {
    run,
    transitions: [
      t(1, null, "PENDING", T0),
      t(2, "PENDING", "RUNNING", T0 + 100),
      t(3, "RUNNING", "PAUSED", T0 + 200),
      t(4, "PAUSED", state, endedAt),
    ],
    steps,
    waits: [
      waitRecord(id, 4, {
        ...{ kind: "approval", name: "pay", status: "resolved", details: { action: "pay", approvers: ["bob"] } },
        resolution: { outcome: "approved", by: USER, at: T0 + 300 },
      }),
    ],
    signals: [{ runId: id, messageId: "m1", name: "note", payload: { n: 1 }, receivedAt: T0 + 250, consumedBy: "w4" }],
  };
}
