import { expect } from "vitest";
import type {
  Actor,
  EffectRecord,
  Json,
  RunRecord,
  RunUsage,
  SignalRecord,
  StepRecord,
  StopRequest,
  TransitionRecord,
  Versions,
  WaitRecord,
} from "../../core/records.ts";
import type { PausedReason, RunState } from "../../core/run-state.ts";
import type {
  CreateRunInput,
  RuntimeBackend,
  SignalRequest,
  StopRunRequest,
  SuspendRequest,
  TransitionRequest,
} from "../backend.ts";

/**
 * Shared data and moves of the conformance suite. Times are fixed numbers, never the clock, so
 * every lease comparison is exact.
 */

/** Gives the backend of the current test (a fresh one per test). */
export type UseBackend = () => RuntimeBackend;

export const T0 = 1_700_000_000_000;
export const LEASE_MS = 30_000;
export const VERSIONS: Versions = { workflow: "wf-1", policy: null, runtime: "0.1.0" };
export const USER: Actor = { kind: "user", id: "alice" };
export const WORKER: Actor = { kind: "worker", id: "w1" };

let counter = 0;

/** A fresh run id, unique within the process. */
export function runId(prefix = "run"): string {
  counter += 1;
  return `${prefix}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}

/** Input of `createRun` with sensible defaults. */
export function runInput(overrides: Partial<CreateRunInput> = {}): CreateRunInput {
  return {
    id: runId(),
    agent: "report_builder",
    workflow: "build",
    key: null,
    input: { quarter: "2026-Q3", tags: ["a", "b"], nested: { n: 1.5, ok: true, none: null } },
    versions: VERSIONS,
    meta: { module: "examples/report-builder.ts" },
    actor: USER,
    reason: "started by test",
    at: T0,
    ...overrides,
  };
}

/** Creates a run and returns it. */
export async function newRun(backend: RuntimeBackend, overrides: Partial<CreateRunInput> = {}): Promise<RunRecord> {
  const { run, created } = await backend.createRun(runInput(overrides));
  expect(created).toBe(true);
  return run;
}

/** A transition request with defaults; `fence` defaults to the epoch `epoch`. */
export function move(
  run: Pick<RunRecord, "id" | "epoch">,
  from: RunState,
  to: RunState,
  extra: Partial<TransitionRequest> = {},
): TransitionRequest {
  return {
    runId: run.id,
    from,
    to,
    actor: WORKER,
    reason: `${from} -> ${to}`,
    versions: VERSIONS,
    at: T0 + 1_000,
    fence: { epoch: run.epoch },
    ...extra,
  };
}

/**
 * Creates a run, claims it as `workerId` at `now` and moves it to RUNNING: the state in which a
 * worker executes it.
 */
export async function runningRun(
  backend: RuntimeBackend,
  options: { workerId?: string; now?: number; overrides?: Partial<CreateRunInput> } = {},
): Promise<RunRecord> {
  const now = options.now ?? T0;
  const run = await newRun(backend, { at: now, ...options.overrides });
  const claimedRun = await backend.claimRun({
    workerId: options.workerId ?? "w1",
    now,
    leaseMs: LEASE_MS,
    runId: run.id,
  });
  expect(claimedRun?.id).toBe(run.id);
  const { run: running } = await backend.transition(move(claimedRun as RunRecord, "PENDING", "RUNNING", { at: now }));
  return running;
}

/** A step with every optional field set. */
export function fullStep(runIdValue: string, seq: number, epoch: number): StepRecord {
  return {
    runId: runIdValue,
    seq,
    kind: "tool",
    name: "fetch_data",
    status: "completed",
    argsDigest: "d".repeat(64),
    args: { quarter: "2026-Q3", list: [1, "two", null, { three: 3 }] },
    result: { rows: [{ id: 1, amount: 12.5 }], empty: [], flag: false },
    error: { name: "ToolFailedError", message: "boom", code: "TOOL_FAILED", retryable: false, data: { tool: "x" } },
    attempts: [
      { attempt: 1, startedAt: T0, endedAt: T0 + 10, error: { name: "Error", message: "first try failed" } },
      { attempt: 2, startedAt: T0 + 20, endedAt: T0 + 30 },
    ],
    heartbeat: { progress: 0.5, cursor: "abc" },
    usage: { inputTokens: 120, outputTokens: 40, modelCalls: 2 },
    startedAt: T0,
    endedAt: T0 + 30,
    epoch,
  };
}

/** A start record: no result, error, heartbeat or usage yet. */
export function startedStep(runIdValue: string, seq: number, epoch: number): StepRecord {
  return {
    runId: runIdValue,
    seq,
    kind: "tool",
    name: "fetch_data",
    status: "started",
    argsDigest: "e".repeat(64),
    args: undefined,
    result: undefined,
    error: undefined,
    attempts: [{ attempt: 1, startedAt: T0, endedAt: null }],
    heartbeat: undefined,
    usage: undefined,
    startedAt: T0,
    endedAt: null,
    epoch,
  };
}

/**
 * The effect record of step `seq` with every field set (an operator's decision on an effect whose
 * outcome was unknown); `overrides` changes any of them.
 */
export function effectRecord(seq: number, overrides: Partial<EffectRecord> = {}): EffectRecord {
  return {
    id: `e${seq}`,
    namespace: "report_builder/transfer",
    idempotencyKey: `run:${seq}`,
    status: "applied",
    intentAt: T0 + 5,
    receipt: { transferId: "tr-42", amounts: [12.5, null], ok: true },
    settledBy: "reconcile",
    settledAt: T0 + 900,
    unknown: "the service timed out",
    reconciliation: { outcome: "applied", by: USER, at: T0 + 900, note: "seen in the bank's ledger" },
    compensate: "refund",
    compensates: 3,
    ...overrides,
  };
}

/** An effect whose intent is recorded and whose outcome is not known yet: its optional fields unset. */
export function intendedEffect(seq: number): EffectRecord {
  return effectRecord(seq, {
    status: "intended",
    receipt: undefined,
    settledBy: undefined,
    settledAt: undefined,
    unknown: undefined,
    reconciliation: undefined,
    compensate: null,
    compensates: undefined,
  });
}

/** A run's usage with every figure distinct. */
export function runUsage(scale = 1): RunUsage {
  return {
    inputTokens: 1200 * scale,
    outputTokens: 340 * scale,
    modelCalls: 3 * scale,
    costUsd: 0.0125 * scale,
    toolCalls: 4 * scale,
    steps: 9 * scale,
  };
}

/** What a refused call rejected with; fails the test when it did not reject. */
export async function refusal(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the call to be refused, it succeeded");
}

/** An open wait of `run` with id `w<seq>` (a signal wait named "approved" unless told otherwise). */
export function waitRecord(runIdValue: string, seq: number, overrides: Partial<WaitRecord> = {}): WaitRecord {
  return {
    runId: runIdValue,
    id: `w${seq}`,
    seq,
    kind: "signal",
    name: "approved",
    status: "open",
    details: {},
    dueAt: null,
    resolution: undefined,
    createdAt: T0 + 50,
    ...overrides,
  };
}

/** A `suspend` request of a RUNNING run: stores `waits`, blocked on all of them unless told otherwise. */
export function suspendRequest(
  run: Pick<RunRecord, "id" | "epoch">,
  waits: readonly WaitRecord[],
  extra: Partial<SuspendRequest> = {},
): SuspendRequest {
  return {
    runId: run.id,
    epoch: run.epoch,
    waits,
    blockedOn: waits.map((w) => w.id),
    pausedReason: "awaiting_signal",
    actor: WORKER,
    reason: "waits for a signal",
    versions: VERSIONS,
    at: T0 + 100,
    ...extra,
  };
}

/**
 * Creates a run, takes it to RUNNING and suspends it on the waits `specs` describe (ids `w<seq>`),
 * blocked on all of them: returns the PAUSED run and the waits as stored.
 */
export async function pausedRun(
  backend: RuntimeBackend,
  specs: ReadonlyArray<Partial<WaitRecord> & { seq: number }>,
  options: { pausedReason?: PausedReason; workerId?: string; overrides?: Partial<CreateRunInput> } = {},
): Promise<{ run: RunRecord; waits: WaitRecord[] }> {
  const running = await runningRun(backend, {
    ...(options.workerId ? { workerId: options.workerId } : {}),
    ...(options.overrides ? { overrides: options.overrides } : {}),
  });
  const waits = specs.map((spec) => waitRecord(running.id, spec.seq, spec));
  const result = await backend.suspend(
    suspendRequest(running, waits, { pausedReason: options.pausedReason ?? "awaiting_signal" }),
  );
  if (!result.paused) throw new Error(`pausedRun: run ${running.id} was not paused`);
  return { run: result.run, waits };
}

/** A `deliverSignal` request from USER. */
export function signalTo(
  runIdValue: string,
  name: string,
  messageId: string,
  extra: Partial<SignalRequest> = {},
): SignalRequest {
  return {
    runId: runIdValue,
    name,
    payload: { answer: "yes", n: 1 },
    messageId,
    actor: USER,
    versions: VERSIONS,
    at: T0 + 200,
    ...extra,
  };
}

/** A `requestStop` request from USER. */
export function stopOf(
  runIdValue: string,
  kind: StopRequest["kind"],
  extra: Partial<StopRequest> = {},
): StopRunRequest {
  return {
    runId: runIdValue,
    request: { kind, by: USER, reason: "no longer needed", at: T0 + 2_000, ...extra },
    versions: VERSIONS,
  };
}

/** Ends a RUNNING run (COMPLETED with `output` unless told otherwise), releasing its lease. */
export async function endRun(
  backend: RuntimeBackend,
  run: Pick<RunRecord, "id" | "epoch">,
  to: RunState = "COMPLETED",
  extra: Partial<TransitionRequest> = {},
): Promise<{ run: RunRecord; transition: TransitionRecord }> {
  const output: Json = { done: true };
  return backend.transition(
    move(run, "RUNNING", to, { patch: { ...(to === "COMPLETED" ? { output } : {}), releaseLease: true }, ...extra }),
  );
}

/** Takes a RUNNING run over from a lapsed lease (recovery): INTERRUPTED, lease cleared, epoch + 1. */
export async function interruptRun(backend: RuntimeBackend, run: RunRecord): Promise<RunRecord> {
  const { run: interrupted } = await backend.transition(
    move(run, "RUNNING", "INTERRUPTED", {
      actor: { kind: "system", id: "recovery" },
      fence: { takeover: { epoch: run.epoch, leaseExpiresAt: run.leaseExpiresAt } },
    }),
  );
  return interrupted;
}

/** Everything stored about a run: to show that a refused write stored nothing. */
export async function storedState(
  backend: RuntimeBackend,
  runIdValue: string,
): Promise<{
  run: RunRecord | undefined;
  transitions: TransitionRecord[];
  waits: WaitRecord[];
  signals: SignalRecord[];
}> {
  return {
    run: await backend.getRun(runIdValue),
    transitions: await backend.listTransitions(runIdValue),
    waits: await backend.loadWaits(runIdValue),
    signals: await backend.listSignals(runIdValue),
  };
}
