import type { AgentDefinition } from "../core/agent-definition.ts";
import { digestContract } from "../core/contract-digest.ts";
import type {
  EffectRecord,
  Json,
  RunRecord,
  SignalRecord,
  StepRecord,
  TransitionRecord,
  WaitRecord,
} from "../core/records.ts";
import { retentionOf } from "../core/retention.ts";
import { resolveRetryPolicy } from "../core/retry-policy.ts";
import {
  type ContractApproval,
  type ContractCheckpoint,
  type ContractEffect,
  type ContractJob,
  type ContractRetry,
  type ContractUnresolved,
  type ContractWait,
  contractState,
  RUN_CONTRACT_VERSION,
  type RunContract,
} from "../core/run-contract.ts";
import { isolationOf } from "./run-contract-sandboxes.ts";
import {
  ambiguityRuleOf,
  type ContractSettings,
  DEFAULT_CONTRACT_SETTINGS,
  modelContextOf,
  recoveryRulesOf,
  retryAndTimeoutOf,
} from "./run-contract-sections.ts";
import { usageOfRun } from "./run-usage.ts";

/**
 * Builds a run's contract (`core/run-contract.ts` has its shape) from everything stored about the
 * run: `runtime.exportRun(runId)` reads the records, this turns them into the document.
 */

/** What {@link buildRunContract} needs: everything stored about one run. */
export interface RunContractInput {
  run: RunRecord;
  /** The run's transitions, in id order. */
  transitions: readonly TransitionRecord[];
  /** The run's steps, in seq order. */
  steps: readonly StepRecord[];
  /** The run's waits. */
  waits: readonly WaitRecord[];
  /** The run's inbox of signals. */
  signals: readonly SignalRecord[];
  /** The runs it spawned. */
  children: readonly RunRecord[];
  /** Where the run is kept: the backend's name and, when known, its file or schema. */
  store: { backend: string; location?: string };
  /**
   * The agent's definition, for its tools' retry policies and timeouts; undefined when the
   * exporting process does not have the agent's code (the `retries` entries are then `null`).
   */
  agent?: AgentDefinition | undefined;
  /** When the export was made (epoch milliseconds). */
  exportedAt: number;
  /** The exporting runtime's settings the contract states. @default {@link DEFAULT_CONTRACT_SETTINGS} */
  settings?: ContractSettings | undefined;
}

/** Builds the contract of one run from its records. Pure: reads only `input`. */
export function buildRunContract(input: RunContractInput): RunContract {
  const { run, store, exportedAt } = input;
  const transitions = [...input.transitions].sort((a, b) => a.id - b.id);
  const steps = [...input.steps].sort((a, b) => a.seq - b.seq);
  const waits = [...input.waits];
  const settings = input.settings ?? DEFAULT_CONTRACT_SETTINGS;
  const effects = effectsOf(steps, input.agent);
  const { usage, source } = usageOfRun(run, steps);
  const body: Omit<RunContract, "contract"> = {
    job: jobOf(run),
    run: runOf(run, transitions, steps, input.children),
    checkpoint: checkpointOf(transitions, steps, effects, store, run, settings),
    retries: retriesOf(steps, input.agent),
    retryAndTimeout: retryAndTimeoutOf(settings),
    effects,
    waits: waits.map(waitOf),
    signals: input.signals.map((s) => ({
      messageId: s.messageId,
      name: s.name,
      payload: s.payload,
      receivedAt: iso(s.receivedAt),
      consumedBy: s.consumedBy,
    })),
    approvals: waits.filter((w) => w.kind === "approval").map(approvalOf),
    isolation: isolationOf(run.id, steps),
    recovery: {
      ...recoveryRulesOf(run, settings),
      recoveriesUsed: run.recoveries,
      interruptions: transitions
        .filter((t) => t.to === "INTERRUPTED")
        .map((t) => ({ transitionId: t.id, at: iso(t.at), from: t.from, actor: t.actor, reason: t.reason })),
      stopRequest: run.stopRequest ? { ...run.stopRequest, at: iso(run.stopRequest.at) } : null,
    },
    completion: {
      state: run.state,
      contractState: contractState(run.state, run.pausedReason),
      output: run.output ?? null,
      error: run.error ?? null,
      delivery: null,
      receipts: effects
        .filter((e) => e.receipt !== null)
        .map((e) => ({ effectId: e.id, seq: e.seq, tool: e.tool, status: e.status, receipt: e.receipt })),
      acceptance: run.acceptance ? { ...run.acceptance, at: iso(run.acceptance.at) } : null,
      unresolved: unresolvedOf(waits, effects),
    },
    usage: { ...usage, source },
    journal: { steps },
  };
  return {
    contract: { version: RUN_CONTRACT_VERSION, exportedAt: iso(exportedAt), digest: digestContract(body) },
    ...body,
  };
}

function runOf(
  run: RunRecord,
  transitions: readonly TransitionRecord[],
  steps: readonly StepRecord[],
  children: readonly RunRecord[],
): RunContract["run"] {
  return {
    id: run.id,
    key: run.key,
    agent: run.agent,
    workflow: run.workflow,
    input: run.input,
    meta: run.meta,
    parentRunId: run.parentRunId,
    children: children.map((c) => c.id).sort(),
    continuedFrom: run.continuedFrom,
    continuedTo: run.continuedTo,
    forkedFrom: run.forkedFrom ? { ...run.forkedFrom, at: iso(run.forkedFrom.at) } : null,
    forks: (run.forks ?? []).map((f) => ({ ...f, at: iso(f.at) })),
    versions: run.versions,
    modelAndPromptVersions: modelContextOf(run, steps),
    state: run.state,
    contractState: contractState(run.state, run.pausedReason),
    pausedReason: run.pausedReason,
    epoch: run.epoch,
    parentClosePolicy: run.parentClosePolicy,
    createdAt: iso(run.createdAt),
    updatedAt: iso(run.updatedAt),
    transitions: transitions.map((t) => ({
      id: t.id,
      at: iso(t.at),
      actor: t.actor,
      from: t.from,
      to: t.to,
      contractState: contractState(t.to, t.pausedReason),
      pausedReason: t.pausedReason,
      reason: t.reason,
      versions: t.versions,
    })),
  };
}

function jobOf(run: RunRecord): ContractJob {
  const job = run.meta.job;
  const declared = job !== null && typeof job === "object" && !Array.isArray(job) ? job : {};
  return {
    jobId: declared.jobId ?? null,
    objective: declared.objective ?? null,
    acceptanceRule: declared.acceptanceRule ?? null,
    owner: declared.owner ?? null,
    authority: declared.authority ?? null,
  };
}

function checkpointOf(
  transitions: readonly TransitionRecord[],
  steps: readonly StepRecord[],
  effects: readonly ContractEffect[],
  store: RunContractInput["store"],
  run: RunRecord,
  settings: ContractSettings,
): ContractCheckpoint {
  const last = transitions.at(-1);
  const completed = steps.filter((s) => s.status === "completed");
  const open = steps.filter((s) => s.status === "started").map((s) => s.seq);
  const uncertain = effects.filter((e) => e.status === "intended" || e.status === "unknown").map((e) => e.id);
  const replayed = steps.length - open.length;
  const rerun =
    open.length === 0
      ? "no step is without an outcome"
      : `the ${open.length === 1 ? "step" : "steps"} without one (seq ${open.join(", ")}) run again as a new attempt`;
  const settle =
    uncertain.length === 0
      ? "an effect of unknown outcome would be settled by its tool's status query or an operator's reconcile, never by running it blind"
      : `effect ${uncertain.join(", ")} of unknown outcome is settled first by its tool's status query, else by an operator's reconcile, never by running it blind`;
  return {
    store: { backend: store.backend, location: store.location ?? null },
    retentionAndDeletion: retentionOf(run, settings.retention),
    lastCommittedTransition: last ? { id: last.id, to: last.to, at: iso(last.at) } : null,
    lastCompletedStep: completed.at(-1)?.seq ?? null,
    checkpointedSteps: replayed,
    stepsWithoutOutcome: open,
    resumeRule: cancelPending(run)
      ? `A cancel is pending until every effect of unknown outcome is reconciled: then a worker settles any other open effect (its tool's status query) and ends the run CANCELLED, or compensates it first, without replaying the workflow; ${settle}.`
      : `A resume replays the workflow from its journal: the ${replayed} ${replayed === 1 ? "step" : "steps"} with a checkpointed outcome return it without running, ${rerun}, and ${settle}.`,
  };
}

/** A cancel waits for an operator's reconcile (DESIGN §5): it is carried out instead of a resume. */
function cancelPending(run: RunRecord): boolean {
  return run.stopRequest?.kind === "cancel" && (run.state === "NEEDS_RECONCILIATION" || run.state === "RECONCILING");
}

function retriesOf(steps: readonly StepRecord[], agent: AgentDefinition | undefined): ContractRetry[] {
  const byTool = new Map<string, { calls: number; attempts: number; seqs: number[] }>();
  for (const step of steps) {
    if (step.kind !== "tool") continue;
    const seen = byTool.get(step.name) ?? { calls: 0, attempts: 0, seqs: [] };
    seen.calls += 1;
    seen.seqs.push(step.seq);
    seen.attempts += step.attempts.length;
    byTool.set(step.name, seen);
  }
  return [...byTool].map(([tool, { calls, attempts, seqs }]) => {
    const definition = agent?.tools[tool];
    if (!definition) {
      return {
        tool,
        calls,
        steps: seqs,
        attempts,
        policy: null,
        startToCloseTimeoutMs: null,
        heartbeatTimeoutMs: null,
        note: agent
          ? `agent "${agent.name}" as loaded has no tool "${tool}"`
          : "the agent's code was not loaded by the exporting process; export from a runtime that has the agent (`cairn export <runId> --module <file>`) for its policy",
      };
    }
    const p = resolveRetryPolicy(definition.retry);
    return {
      tool,
      calls,
      steps: seqs,
      attempts,
      policy: {
        maximumAttempts: p.maximumAttempts,
        initialIntervalMs: p.initialIntervalMs,
        backoffCoefficient: p.backoffCoefficient,
        maximumIntervalMs: p.maximumIntervalMs,
        jitter: p.jitter,
        nonRetryableErrors: p.nonRetryableErrors.map((e) => (typeof e === "string" ? e : e.name)),
      },
      startToCloseTimeoutMs: definition.startToCloseTimeoutMs ?? null,
      heartbeatTimeoutMs: definition.heartbeatTimeoutMs ?? null,
      note: null,
    };
  });
}

function effectsOf(steps: readonly StepRecord[], agent: AgentDefinition | undefined): ContractEffect[] {
  const withEffect = steps.filter((s): s is StepRecord & { effect: EffectRecord } => s.effect !== undefined);
  return withEffect.map((step) => {
    const e = step.effect;
    const undoer = withEffect.find((other) => other.effect.compensates === step.seq);
    return {
      id: e.id,
      seq: step.seq,
      tool: step.name,
      namespace: e.namespace,
      idempotencyKey: e.idempotencyKey,
      intentAt: iso(e.intentAt),
      attempts: {
        count: step.attempts.length,
        list: step.attempts.map((a) => ({
          attempt: a.attempt,
          startedAt: iso(a.startedAt),
          endedAt: a.endedAt === null ? null : iso(a.endedAt),
          error: a.error ?? null,
        })),
      },
      status: e.status,
      receipt: e.receipt ?? null,
      settledBy: e.settledBy ?? null,
      settledAt: e.settledAt === undefined ? null : iso(e.settledAt),
      unknown: e.unknown ?? null,
      statusAnswers: (e.statusAnswers ?? []).map((a) => ({
        at: iso(a.at),
        attempt: a.attempt,
        outcome: a.outcome,
        note: a.note ?? null,
      })),
      reconciliation: e.reconciliation
        ? {
            outcome: e.reconciliation.outcome,
            by: e.reconciliation.by,
            at: iso(e.reconciliation.at),
            note: e.reconciliation.note ?? null,
          }
        : null,
      compensates: e.compensates ?? null,
      ambiguityRule: ambiguityRuleOf(step, agent),
      compensation: {
        declared: e.compensate,
        compensatedBy: undoer?.seq ?? null,
        status: undoer?.effect.status ?? null,
      },
    };
  });
}

function waitOf(w: WaitRecord): ContractWait {
  const r = w.resolution;
  return {
    id: w.id,
    seq: w.seq,
    kind: w.kind,
    name: w.name,
    status: w.status,
    details: w.details,
    dueAt: w.dueAt === null ? null : iso(w.dueAt),
    createdAt: iso(w.createdAt),
    resolution: r
      ? {
          outcome: r.outcome,
          value: r.value ?? null,
          by: r.by ?? null,
          messageId: r.messageId ?? null,
          note: r.note ?? null,
          at: iso(r.at),
        }
      : null,
  };
}

function approvalOf(w: WaitRecord): ContractApproval {
  const details = (
    w.details !== null && typeof w.details === "object" && !Array.isArray(w.details) ? w.details : {}
  ) as {
    action?: Json;
    digest?: Json;
    approvers?: Json;
  };
  const r = w.resolution;
  const decision =
    r?.outcome === "approved" || r?.outcome === "denied" || r?.outcome === "expired"
      ? r.outcome
      : w.status === "open"
        ? null
        : "closed";
  const decided = decision === "approved" || decision === "denied";
  return {
    id: w.id,
    seq: w.seq,
    action: typeof details.action === "string" ? details.action : w.name,
    digest: typeof details.digest === "string" ? details.digest : null,
    approvers: Array.isArray(details.approvers) ? details.approvers.filter((a) => typeof a === "string") : [],
    expiresAt: w.dueAt === null ? null : iso(w.dueAt),
    decision,
    decider: decided ? (r?.by ?? null) : null,
    decidedAt: r && decision !== null ? iso(r.at) : null,
    note: r?.note ?? null,
  };
}

function unresolvedOf(waits: readonly WaitRecord[], effects: readonly ContractEffect[]): ContractUnresolved[] {
  const items: ContractUnresolved[] = [];
  for (const w of waits) {
    if (w.status !== "open") continue;
    items.push(
      w.kind === "approval"
        ? { kind: "approval", id: w.id, seq: w.seq, what: `approval "${w.name}" is pending` }
        : { kind: "wait", id: w.id, seq: w.seq, what: `${w.kind} wait "${w.name}" is open` },
    );
  }
  for (const e of effects) {
    if (e.status !== "intended" && e.status !== "unknown") continue;
    items.push({
      kind: "effect",
      id: e.id,
      seq: e.seq,
      what:
        e.status === "unknown"
          ? `effect of tool "${e.tool}" (key ${e.idempotencyKey}) has an unknown outcome${e.unknown ? `: ${e.unknown}` : ""}; reconcile it`
          : `effect of tool "${e.tool}" (key ${e.idempotencyKey}) is intended, no outcome recorded yet`,
    });
  }
  return items.sort((a, b) => a.seq - b.seq);
}

function iso(at: number): string {
  return new Date(at).toISOString();
}
