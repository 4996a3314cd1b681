import type { AgentDefinition } from "../core/agent-definition.ts";
import type { SerializedError } from "../core/errors.ts";
import type {
  AcceptanceRecord,
  Actor,
  EffectRecord,
  EffectStatus,
  Json,
  RunRecord,
  RunUsage,
  StepRecord,
  TransitionRecord,
  Versions,
  WaitKind,
  WaitRecord,
} from "../core/records.ts";
import { resolveRetryPolicy } from "../core/retry-policy.ts";
import type { PausedReason, RunState } from "../core/run-state.ts";
import { usageOfRun } from "./run-usage.ts";

/**
 * The run contract (DESIGN §3, "export"): one self-contained record of a run that the people
 * accountable for its job can read without Cairn — what the job was, every state change, the last
 * safe resume point, the retry rules, each external effect with its idempotency key and receipt,
 * what it waited for and who approved what, how it recovered, how it ended, whether its outcome
 * was accepted, what it cost, and the full journal. Built by `runtime.exportRun(runId)`; `cairn
 * export <runId> [--yaml]` prints it.
 *
 * Times are ISO 8601 strings (UTC), except inside `journal`, which keeps the stored records as
 * they are (epoch milliseconds). Nothing is invented: a field the run has no record for is `null`.
 */

/** The version of the contract's shape; a change that is not an addition gets a new one. */
export const RUN_CONTRACT_VERSION = "cairn.run-contract/1";

/**
 * A run's state in the contract's vocabulary: PENDING is `admitted`; PAUSED on a question or a
 * signal is `waiting_for_input`, on an approval `awaiting_approval`, on a retry backoff
 * `retry_wait`, on anything else (a timer, a child, a parent that ended) `paused`; every other
 * state is its own name in lower case.
 */
export type ContractState =
  | "admitted"
  | "running"
  | "waiting_for_input"
  | "awaiting_approval"
  | "retry_wait"
  | "paused"
  | "resuming"
  | "cancelling"
  | "compensating"
  | "needs_reconciliation"
  | "reconciling"
  | "completed"
  | "failed"
  | "blocked"
  | "interrupted"
  | "cancelled"
  | "compensated";

/** Maps a Cairn state (and paused reason) to the contract's vocabulary (see {@link ContractState}). */
export function contractState(state: RunState, pausedReason: PausedReason | null): ContractState {
  if (state === "PENDING") return "admitted";
  if (state === "PAUSED") {
    switch (pausedReason) {
      case "awaiting_user":
      case "awaiting_signal":
        return "waiting_for_input";
      case "awaiting_approval":
        return "awaiting_approval";
      case "awaiting_retry":
        return "retry_wait";
      default:
        return "paused";
    }
  }
  return state.toLowerCase() as ContractState;
}

/** What {@link buildRunContract} needs: everything stored about one run. */
export interface RunContractInput {
  run: RunRecord;
  /** The run's transitions, in id order. */
  transitions: readonly TransitionRecord[];
  /** The run's steps, in seq order. */
  steps: readonly StepRecord[];
  /** The run's waits. */
  waits: readonly WaitRecord[];
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
}

/** One run, exported: see the module comment. Every section is always present. */
export interface RunContract {
  /** What this document is. */
  contract: { version: typeof RUN_CONTRACT_VERSION; exportedAt: string };
  job: ContractJob;
  run: ContractRun;
  checkpoint: ContractCheckpoint;
  /** Per tool the run called, in the order of its first call. */
  retries: ContractRetry[];
  /** Per effect step, in seq order. */
  effects: ContractEffect[];
  /** Every wait of the run (questions, signals, timers, approvals, children, retry backoffs). */
  waits: ContractWait[];
  /** The waits of kind `approval`, with their decision. */
  approvals: ContractApproval[];
  /** Where the run's code executed: no sandbox exists in Cairn yet, so `sandbox` is null. */
  isolation: { sandbox: null };
  recovery: ContractRecovery;
  completion: ContractCompletion;
  usage: ContractUsage;
  /** The stored step records as they are: with `run` and `waits`, enough to rebuild the run. */
  journal: { steps: StepRecord[] };
}

/**
 * The job the run serves, as the starter declared it (`runtime.run(…, { job: { objective,
 * acceptanceRule, owner, authority } })`, stored as `meta.job`). A field not declared is `null`.
 */
export interface ContractJob {
  objective: Json;
  acceptanceRule: Json;
  owner: Json;
  authority: Json;
}

/** The run's identity, lineage, versions, state and full transition log. */
export interface ContractRun {
  id: string;
  key: string | null;
  agent: string;
  workflow: string;
  input: Json;
  /** What the starter attached (`meta`), the job included. */
  meta: Record<string, Json>;
  parentRunId: string | null;
  /** Ids of the runs it spawned. */
  children: string[];
  continuedFrom: string | null;
  continuedTo: string | null;
  /** The versions in force at the run's last transition (each transition carries its own). */
  versions: Versions;
  state: RunState;
  contractState: ContractState;
  pausedReason: PausedReason | null;
  createdAt: string;
  updatedAt: string;
  transitions: ContractTransition[];
}

/** One logged state change. */
export interface ContractTransition {
  id: number;
  at: string;
  actor: Actor;
  from: RunState | null;
  to: RunState;
  contractState: ContractState;
  pausedReason: PausedReason | null;
  reason: string;
  versions: Versions;
}

/** The last safe resume point and how a resume proceeds from it. */
export interface ContractCheckpoint {
  store: { backend: string; location: string | null };
  lastCommittedTransition: { id: number; to: RunState; at: string } | null;
  /** The highest seq of a completed step, or null when none completed. */
  lastCompletedStep: number | null;
  /** Steps whose outcome (completed or failed) is checkpointed: a replay returns it without running. */
  checkpointedSteps: number;
  /** Steps started without an outcome: a resume runs them again (as a new attempt). */
  stepsWithoutOutcome: number[];
  /** How the run resumes, in one sentence. */
  resumeRule: string;
}

/** The retry and timeout rules of one tool the run called. */
export interface ContractRetry {
  tool: string;
  /** Tool steps of the run with this tool, and their attempts in all. */
  calls: number;
  attempts: number;
  /** The resolved policy, or null when the agent's code is not loaded (see `note`). */
  policy: {
    maximumAttempts: number;
    initialIntervalMs: number;
    backoffCoefficient: number;
    maximumIntervalMs: number;
    jitter: number;
    /** Error classes or names never retried (classes by name). */
    nonRetryableErrors: string[];
  } | null;
  /** Per attempt; null when there is none or the code is not loaded. */
  startToCloseTimeoutMs: number | null;
  heartbeatTimeoutMs: number | null;
  /** Why `policy` is null. */
  note: string | null;
}

/** One attempt of a step. */
export interface ContractAttempt {
  attempt: number;
  startedAt: string;
  endedAt: string | null;
  error: SerializedError | null;
}

/** One external effect (DESIGN §5): its intent, key, attempts, outcome and evidence. */
export interface ContractEffect {
  /** `e<seq>`, what `reconcile` names. */
  id: string;
  seq: number;
  tool: string;
  namespace: string;
  idempotencyKey: string;
  intentAt: string;
  attempts: { count: number; list: ContractAttempt[] };
  status: EffectStatus;
  receipt: Json;
  settledBy: "attempt" | "status" | "reconcile" | null;
  settledAt: string | null;
  /** Why the outcome is unknown, while it is. */
  unknown: string | null;
  /**
   * Every answer of the tool's status query, oldest first: the attempt it was asked about and
   * what it said (a query that threw or did not answer in time is `unknown`, with why).
   */
  statusAnswers: { at: string; attempt: number; outcome: "applied" | "not_applied" | "unknown"; note: string | null }[];
  reconciliation: { outcome: "applied" | "not_applied"; by: Actor; at: string; note: string | null } | null;
  /** On a compensation's own effect: the seq of the effect it undoes. */
  compensates: number | null;
  compensation: {
    /** The declared tool that undoes it, or null when none is declared. */
    declared: string | null;
    /** The seq of the step whose effect undoes this one, or null. */
    compensatedBy: number | null;
    /** That compensation's status, or null. */
    status: EffectStatus | null;
  };
}

/** One wait. */
export interface ContractWait {
  id: string;
  seq: number;
  kind: WaitKind;
  name: string;
  status: "open" | "resolved" | "closed";
  details: Json;
  dueAt: string | null;
  createdAt: string;
  resolution: {
    outcome: string;
    value: Json;
    by: Actor | null;
    messageId: string | null;
    note: string | null;
    at: string;
  } | null;
}

/** One approval: its scope (action and payload digest), approvers, expiry and decision. */
export interface ContractApproval {
  id: string;
  seq: number;
  action: string;
  digest: string | null;
  approvers: string[];
  expiresAt: string | null;
  /** `approved`, `denied`, `expired`, `closed` (the run ended first), or null while pending. */
  decision: "approved" | "denied" | "expired" | "closed" | null;
  /** Who approved or denied it. */
  decider: Actor | null;
  decidedAt: string | null;
  note: string | null;
}

/** How the run came back from process and worker losses. */
export interface ContractRecovery {
  /** Automatic recoveries used (bounded by the workers' recovery policy). */
  recoveriesUsed: number;
  /** Every transition into INTERRUPTED, with who recorded it and why. */
  interruptions: { transitionId: number; at: string; from: RunState | null; actor: Actor; reason: string }[];
  /** A cancel or suspend asked from outside and not yet carried out, or null. */
  stopRequest: { kind: "cancel" | "suspend"; by: Actor; reason: string; at: string } | null;
}

/** How the run ended, the evidence, the verdict, and what is still open. */
export interface ContractCompletion {
  state: RunState;
  contractState: ContractState;
  output: Json;
  error: SerializedError | null;
  /** Where the output was delivered: Cairn records no delivery yet. */
  delivery: null;
  /** The receipts of the run's effects. */
  receipts: { effectId: string; seq: number; tool: string; status: EffectStatus; receipt: Json }[];
  /** An operator's accept or reject, kept apart from completion; null until given. */
  acceptance: { decision: AcceptanceRecord["decision"]; by: Actor; note: string; at: string } | null;
  /** What is still open: open waits, pending approvals, effects intended or of unknown outcome. */
  unresolved: ContractUnresolved[];
}

/** One item still open. */
export interface ContractUnresolved {
  kind: "wait" | "approval" | "effect";
  /** The wait's or the effect's id. */
  id: string;
  seq: number;
  what: string;
}

/** What the run used; `source` says where the figures come from. */
export interface ContractUsage extends RunUsage {
  /** `run`: recorded with the run's ending, children included; `steps`: summed over its own steps. */
  source: "run" | "steps";
}

/** Builds the contract of one run from its records. Pure: reads only `input`. */
export function buildRunContract(input: RunContractInput): RunContract {
  const { run, store, exportedAt } = input;
  const transitions = [...input.transitions].sort((a, b) => a.id - b.id);
  const steps = [...input.steps].sort((a, b) => a.seq - b.seq);
  const waits = [...input.waits];
  const effects = effectsOf(steps);
  const { usage, source } = usageOfRun(run, steps);
  return {
    contract: { version: RUN_CONTRACT_VERSION, exportedAt: iso(exportedAt) },
    job: jobOf(run),
    run: {
      id: run.id,
      key: run.key,
      agent: run.agent,
      workflow: run.workflow,
      input: run.input,
      meta: run.meta,
      parentRunId: run.parentRunId,
      children: input.children.map((c) => c.id).sort(),
      continuedFrom: run.continuedFrom,
      continuedTo: run.continuedTo,
      versions: run.versions,
      state: run.state,
      contractState: contractState(run.state, run.pausedReason),
      pausedReason: run.pausedReason,
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
    },
    checkpoint: checkpointOf(transitions, steps, effects, store, run),
    retries: retriesOf(steps, input.agent),
    effects,
    waits: waits.map(waitOf),
    approvals: waits.filter((w) => w.kind === "approval").map(approvalOf),
    isolation: { sandbox: null },
    recovery: {
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
}

function jobOf(run: RunRecord): ContractJob {
  const job = run.meta.job;
  const declared = job !== null && typeof job === "object" && !Array.isArray(job) ? job : {};
  return {
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
  const byTool = new Map<string, { calls: number; attempts: number }>();
  for (const step of steps) {
    if (step.kind !== "tool") continue;
    const seen = byTool.get(step.name) ?? { calls: 0, attempts: 0 };
    seen.calls += 1;
    seen.attempts += step.attempts.length;
    byTool.set(step.name, seen);
  }
  return [...byTool].map(([tool, { calls, attempts }]) => {
    const definition = agent?.tools[tool];
    if (!definition) {
      return {
        tool,
        calls,
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

function effectsOf(steps: readonly StepRecord[]): ContractEffect[] {
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
