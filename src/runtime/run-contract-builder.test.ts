import { describe, expect, it } from "vitest";
import { defineAgent, defineTool } from "../agent/define.ts";
import { NonRetryableError } from "../core/errors.ts";
import type { EffectRecord, RunRecord, StepRecord, TransitionRecord, WaitRecord } from "../core/records.ts";
import { contractState, RUN_CONTRACT_VERSION } from "../core/run-contract.ts";
import { buildRunContract, type RunContractInput } from "./run-contract-builder.ts";

const T0 = Date.UTC(2026, 6, 1, 12, 0, 0);
const versions = { workflow: "3", policy: null, runtime: "0.1.0" };

function run(patch: Partial<RunRecord> = {}): RunRecord {
  return {
    id: "run_a",
    agent: "payments",
    workflow: "pay",
    key: "invoice-7",
    state: "COMPLETED",
    pausedReason: null,
    input: { invoice: 7 },
    output: { paid: true },
    error: undefined,
    epoch: 2,
    leaseOwner: null,
    leaseExpiresAt: null,
    recoveries: 1,
    lastTransitionId: 6,
    versions,
    meta: {},
    parentRunId: null,
    parentClosePolicy: null,
    stopRequest: undefined,
    continuedFrom: null,
    continuedTo: null,
    usage: undefined,
    acceptance: undefined,
    createdAt: T0,
    updatedAt: T0 + 9000,
    ...patch,
  };
}

function transition(
  id: number,
  from: TransitionRecord["from"],
  to: TransitionRecord["to"],
  reason = "",
): TransitionRecord {
  return {
    runId: "run_a",
    id,
    at: T0 + id * 1000,
    actor: { kind: "worker", id: "w1" },
    from,
    to,
    pausedReason: to === "PAUSED" ? "awaiting_approval" : null,
    reason,
    versions,
  };
}

const transitions: TransitionRecord[] = [
  transition(1, null, "PENDING", "started"),
  transition(2, "PENDING", "RUNNING"),
  transition(3, "RUNNING", "INTERRUPTED", "worker w1 was lost (its process is gone)"),
  transition(4, "INTERRUPTED", "RESUMING"),
  transition(5, "RESUMING", "RUNNING"),
  transition(6, "RUNNING", "COMPLETED", "workflow returned"),
];

function effect(seq: number, patch: Partial<EffectRecord> = {}): EffectRecord {
  return {
    id: `e${seq}`,
    namespace: "payments/transfer",
    idempotencyKey: `run_a:${seq}`,
    status: "applied",
    intentAt: T0 + 2100,
    receipt: { transferId: "t-1" },
    settledBy: "attempt",
    settledAt: T0 + 2500,
    unknown: undefined,
    reconciliation: undefined,
    compensate: "refund",
    compensates: undefined,
    ...patch,
  };
}

function step(seq: number, patch: Partial<StepRecord> = {}): StepRecord {
  return {
    runId: "run_a",
    seq,
    kind: "tool",
    name: "transfer",
    status: "completed",
    argsDigest: "d",
    args: { amount: 10 },
    result: { ok: true },
    error: undefined,
    attempts: [{ attempt: 1, startedAt: T0 + 2000 + seq, endedAt: T0 + 2400 + seq }],
    heartbeat: undefined,
    usage: undefined,
    startedAt: T0 + 2000 + seq,
    endedAt: T0 + 2400 + seq,
    epoch: 1,
    ...patch,
  };
}

function approval(patch: Partial<WaitRecord> = {}): WaitRecord {
  return {
    runId: "run_a",
    id: "w3",
    seq: 3,
    kind: "approval",
    name: "pay-invoice",
    status: "resolved",
    details: { action: "pay-invoice", payload: { amount: 10 }, digest: "sha256:abc", approvers: ["alice", "bob"] },
    dueAt: T0 + 86_400_000,
    resolution: { outcome: "approved", by: { kind: "user", id: "alice" }, note: "ok", at: T0 + 3000 },
    createdAt: T0 + 2600,
    ...patch,
  };
}

const agent = defineAgent({
  name: "payments",
  tools: {
    transfer: defineTool({
      retry: { maximumAttempts: 3, nonRetryableErrors: [NonRetryableError, "Fatal"] },
      startToCloseTimeoutMs: 5000,
      run: async () => ({ ok: true }),
    }),
    refund: defineTool({ run: async () => ({ ok: true }) }),
  },
  workflows: { pay: async () => ({}) },
});

function input(patch: Partial<RunContractInput> = {}): RunContractInput {
  return {
    run: run(),
    transitions,
    steps: [
      step(1, { kind: "value", name: "now", attempts: [] }),
      step(2, {
        effect: effect(2),
        attempts: [
          {
            attempt: 1,
            startedAt: T0 + 2000,
            endedAt: T0 + 2100,
            error: { name: "AttemptInterrupted", message: "cut off" },
          },
          { attempt: 2, startedAt: T0 + 2200, endedAt: T0 + 2500 },
        ],
      }),
      step(3, { kind: "wait", name: "approval:pay-invoice" }),
      step(4, {
        name: "refund",
        effect: effect(4, { namespace: "payments/refund", compensate: null, compensates: 2, status: "applied" }),
      }),
    ],
    waits: [approval()],
    signals: [],
    children: [],
    store: { backend: "sqlite", location: "/tmp/cairn.db" },
    agent,
    exportedAt: T0 + 60_000,
    ...patch,
  };
}

describe("contractState", () => {
  it("maps PENDING, the paused reasons and the rest to the contract's vocabulary", () => {
    expect(contractState("PENDING", null)).toBe("admitted");
    expect(contractState("PAUSED", "awaiting_user")).toBe("waiting_for_input");
    expect(contractState("PAUSED", "awaiting_signal")).toBe("waiting_for_input");
    expect(contractState("PAUSED", "awaiting_retry")).toBe("retry_wait");
    expect(contractState("PAUSED", "awaiting_approval")).toBe("awaiting_approval");
    expect(contractState("PAUSED", "awaiting_timer")).toBe("paused");
    expect(contractState("NEEDS_RECONCILIATION", null)).toBe("needs_reconciliation");
    expect(contractState("COMPLETED", null)).toBe("completed");
    expect(contractState("INTERRUPTED", null)).toBe("interrupted");
  });
});

describe("buildRunContract", () => {
  it("has every section, with ISO times and the full transition log", () => {
    const c = buildRunContract(input());
    expect(Object.keys(c)).toEqual([
      "contract",
      "job",
      "run",
      "checkpoint",
      "retries",
      "retryAndTimeout",
      "effects",
      "waits",
      "signals",
      "approvals",
      "isolation",
      "recovery",
      "completion",
      "usage",
      "journal",
    ]);
    expect(c.contract).toMatchObject({ version: RUN_CONTRACT_VERSION, exportedAt: "2026-07-01T12:01:00.000Z" });
    expect(c.contract.digest.value).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(c.contract.digest.fields["run.transitions[0]"]).toMatch(/^[0-9a-f]{16}$/);
    expect(c.run.transitions.map((t) => [t.id, t.from, t.to])).toEqual(transitions.map((t) => [t.id, t.from, t.to]));
    expect(c.run.transitions[0]?.at).toBe("2026-07-01T12:00:01.000Z");
    expect(c.run.transitions[0]?.contractState).toBe("admitted");
    expect(c.run.createdAt).toBe("2026-07-01T12:00:00.000Z");
    expect(c.run.contractState).toBe("completed");
    expect(c.isolation).toEqual({ isolated: null, sandboxes: [] });
    expect(c.journal.steps).toHaveLength(4);
  });

  it("leaves the job empty (null) when the starter declared none, and never invents one", () => {
    expect(buildRunContract(input()).job).toEqual({
      jobId: null,
      objective: null,
      acceptanceRule: null,
      owner: null,
      authority: null,
    });
    const declared = buildRunContract(
      input({ run: run({ meta: { job: { objective: "pay invoice 7", owner: "finance-ops" } } }) }),
    ).job;
    expect(declared).toEqual({
      jobId: null,
      objective: "pay invoice 7",
      acceptanceRule: null,
      owner: "finance-ops",
      authority: null,
    });
  });

  it("names the last committed transition, the last completed step and how the run resumes", () => {
    const c = buildRunContract(
      input({
        run: run({ state: "INTERRUPTED" }),
        transitions: transitions.slice(0, 3),
        steps: [step(1), step(2, { status: "started", result: undefined, effect: effect(2, { status: "intended" }) })],
      }),
    );
    expect(c.checkpoint.store).toEqual({ backend: "sqlite", location: "/tmp/cairn.db" });
    expect(c.checkpoint.lastCommittedTransition).toEqual({ id: 3, to: "INTERRUPTED", at: "2026-07-01T12:00:03.000Z" });
    expect(c.checkpoint.lastCompletedStep).toBe(1);
    expect(c.checkpoint.stepsWithoutOutcome).toEqual([2]);
    expect(c.checkpoint.resumeRule).toMatch(/replays the workflow from its journal/);
    expect(c.checkpoint.resumeRule).toMatch(/seq 2\) run again/);
    expect(c.checkpoint.resumeRule).toMatch(/effect e2 .*status query.*reconcile/);
  });

  it("gives each tool's resolved retry policy and timeouts, or null without the agent's code", () => {
    const c = buildRunContract(input());
    expect(c.retries.map((r) => r.tool)).toEqual(["transfer", "refund"]);
    const transfer = c.retries[0];
    expect(transfer?.policy).toMatchObject({ maximumAttempts: 3, initialIntervalMs: 1000, backoffCoefficient: 2 });
    expect(transfer?.policy?.nonRetryableErrors).toEqual(["NonRetryableError", "Fatal"]);
    expect(transfer?.startToCloseTimeoutMs).toBe(5000);
    expect(transfer?.heartbeatTimeoutMs).toBeNull();
    expect(transfer).toMatchObject({ calls: 1, attempts: 2 });
    expect(c.retries[1]?.policy?.maximumAttempts).toBe(5);

    const unloaded = buildRunContract(input({ agent: undefined }));
    expect(unloaded.retries[0]?.policy).toBeNull();
    expect(unloaded.retries[0]?.note).toMatch(/not loaded/);
  });

  it("lists effects with key, attempts, receipt and who compensated them", () => {
    const c = buildRunContract(input());
    expect(c.effects.map((e) => e.id)).toEqual(["e2", "e4"]);
    const [paid, refund] = c.effects;
    expect(paid).toMatchObject({
      seq: 2,
      tool: "transfer",
      namespace: "payments/transfer",
      idempotencyKey: "run_a:2",
      status: "applied",
      receipt: { transferId: "t-1" },
      settledBy: "attempt",
      intentAt: "2026-07-01T12:00:02.100Z",
      compensates: null,
      compensation: { declared: "refund", compensatedBy: 4, status: "applied" },
    });
    expect(paid?.attempts.count).toBe(2);
    expect(paid?.attempts.list[0]?.error?.name).toBe("AttemptInterrupted");
    expect(paid?.attempts.list[1]?.endedAt).toBe("2026-07-01T12:00:02.500Z");
    expect(refund).toMatchObject({
      compensates: 2,
      compensation: { declared: null, compensatedBy: null, status: null },
    });
    expect(c.completion.receipts.map((r) => r.effectId)).toEqual(["e2", "e4"]);
  });

  it("gives approvals with digest, approvers, expiry and decision", () => {
    const c = buildRunContract(input());
    expect(c.waits).toHaveLength(1);
    expect(c.approvals).toEqual([
      {
        id: "w3",
        seq: 3,
        action: "pay-invoice",
        digest: "sha256:abc",
        approvers: ["alice", "bob"],
        expiresAt: "2026-07-02T12:00:00.000Z",
        decision: "approved",
        decider: { kind: "user", id: "alice" },
        decidedAt: "2026-07-01T12:00:03.000Z",
        note: "ok",
      },
    ]);
  });

  it("lists what is unresolved: open waits, pending approvals, effects intended or unknown", () => {
    const c = buildRunContract(
      input({
        run: run({ state: "NEEDS_RECONCILIATION", output: undefined }),
        steps: [
          step(2, {
            status: "started",
            effect: effect(2, { status: "unknown", unknown: "timed out", receipt: undefined }),
          }),
          step(5, { effect: effect(5, { status: "intended", receipt: undefined }) }),
          step(6, { effect: effect(6, { status: "not_applied", receipt: undefined }) }),
        ],
        waits: [
          approval({ status: "open", resolution: undefined }),
          approval({
            id: "w7",
            seq: 7,
            kind: "signal",
            name: "go",
            details: {},
            status: "open",
            resolution: undefined,
          }),
        ],
      }),
    );
    expect(c.completion.unresolved.map((u) => [u.kind, u.id])).toEqual([
      ["effect", "e2"],
      ["approval", "w3"],
      ["effect", "e5"],
      ["wait", "w7"],
    ]);
    expect(c.completion.unresolved[0]?.what).toMatch(/unknown outcome: timed out; reconcile it/);
    expect(c.approvals[0]).toMatchObject({ decision: null, decider: null, decidedAt: null });
    expect(c.completion.receipts).toEqual([]);
    expect(c.completion.output).toBeNull();
  });

  it("records interruptions, recoveries, acceptance and children", () => {
    const c = buildRunContract(
      input({
        run: run({
          acceptance: { decision: "accepted", by: { kind: "user", id: "carol" }, note: "fine", at: T0 + 70_000 },
        }),
        children: [run({ id: "run_a.9" }), run({ id: "run_a.5" })],
      }),
    );
    expect(c.recovery.recoveriesUsed).toBe(1);
    expect(c.recovery.interruptions).toEqual([
      {
        transitionId: 3,
        at: "2026-07-01T12:00:03.000Z",
        from: "RUNNING",
        actor: { kind: "worker", id: "w1" },
        reason: "worker w1 was lost (its process is gone)",
      },
    ]);
    expect(c.completion.acceptance).toEqual({
      decision: "accepted",
      by: { kind: "user", id: "carol" },
      note: "fine",
      at: "2026-07-01T12:01:10.000Z",
    });
    expect(c.completion.delivery).toBeNull();
    expect(c.run.children).toEqual(["run_a.5", "run_a.9"]);
  });

  it("takes the run's recorded usage, else sums its steps", () => {
    const recorded = { inputTokens: 10, outputTokens: 5, modelCalls: 1, costUsd: 0.25, toolCalls: 9, steps: 12 };
    expect(buildRunContract(input({ run: run({ usage: recorded }) })).usage).toEqual({ ...recorded, source: "run" });
    const summed = buildRunContract(
      input({
        steps: [
          step(1, { usage: { inputTokens: 100, outputTokens: 20, modelCalls: 2, costUsd: 0.001 } }),
          step(2, { kind: "llm", name: "m", usage: { inputTokens: 50, outputTokens: 10, modelCalls: 1 } }),
          step(3, { kind: "value", name: "now" }),
        ],
      }),
    ).usage;
    expect(summed).toEqual({
      inputTokens: 150,
      outputTokens: 30,
      modelCalls: 3,
      costUsd: 0.001,
      toolCalls: 1,
      steps: 3,
      source: "steps",
    });
  });

  it("is plain JSON: it survives a JSON round trip unchanged", () => {
    const c = buildRunContract(input());
    // toEqual ignores properties that are undefined, which JSON drops; anything else (a Date, a
    // Map, a class instance) would come back different.
    expect(JSON.parse(JSON.stringify(c))).toEqual(c);
  });
});
