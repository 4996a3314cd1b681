import type { ContractDigest } from "./contract-digest.ts";
import type { SerializedError } from "./errors.ts";
import type {
  AcceptanceRecord,
  Actor,
  EffectStatus,
  Json,
  RunUsage,
  StepRecord,
  Versions,
  WaitKind,
} from "./records.ts";
import type {
  ContractModelContext,
  ContractRecoveryRules,
  ContractRetryAndTimeout,
  ContractSignal,
} from "./run-contract-rules.ts";
import type { PausedReason, RunState } from "./run-state.ts";
import type { SandboxInfo } from "./sandbox.ts";

/**
 * The run contract (DESIGN §3, "export"): one self-contained record of a run that the people
 * accountable for its job can read without Cairn — what the job was, every state change, the last
 * safe resume point, the retry rules, each external effect with its idempotency key and receipt,
 * what it waited for and who approved what, how it recovered, how it ended, whether its outcome
 * was accepted, what it cost, and the full journal. Built by `runtime.exportRun(runId)`
 * (`buildRunContract`); `cairn export <runId> [--yaml]` prints it.
 *
 * Times are ISO 8601 strings (UTC), except inside `journal`, which keeps the stored records as
 * they are (epoch milliseconds). Nothing is invented: a field the run has no record for is `null`.
 *
 * Plain data types, here in core so that the runtime that builds a contract and the client that
 * reads one over HTTP both import them from below.
 */

export type {
  ContractModelContext,
  ContractRecoveryRules,
  ContractRetryAndTimeout,
  ContractSignal,
} from "./run-contract-rules.ts";

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
  | "compensated"
  | "moved";

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

/** One run, exported: see the module comment. Every section is always present. */
export interface RunContract {
  /** What this document is. */
  contract: {
    version: typeof RUN_CONTRACT_VERSION;
    exportedAt: string;
    /**
     * sha-256 over the canonical text of every other section, and per field, so that an import
     * of an altered contract names the field that changed (`core/contract-digest.ts`).
     */
    digest: ContractDigest;
  };
  job: ContractJob;
  run: ContractRun;
  checkpoint: ContractCheckpoint;
  /** Per tool the run called, in the order of its first call. */
  retries: ContractRetry[];
  /** The retry and timeout rules every step is under, and the cancellation grace. */
  retryAndTimeout: ContractRetryAndTimeout;
  /** Per effect step, in seq order. */
  effects: ContractEffect[];
  /** Every wait of the run (questions, signals, timers, approvals, children, retry backoffs). */
  waits: ContractWait[];
  /** The run's inbox: every signal it received, read (`consumedBy` a wait) or not yet. */
  signals: ContractSignal[];
  /** The waits of kind `approval`, with their decision. */
  approvals: ContractApproval[];
  /** Where the run's commands executed: each sandbox of the run (`ctx.sandbox`). */
  isolation: ContractIsolation;
  recovery: ContractRecovery;
  completion: ContractCompletion;
  usage: ContractUsage;
  /** The stored step records as they are: with `run` and `waits`, enough to rebuild the run. */
  journal: { steps: StepRecord[] };
}

/** The run's sandboxes (DESIGN §4, *Sandboxes*), from its `sandbox` steps. */
export interface ContractIsolation {
  /** False when a sandbox of the run isolated nothing (the local provider); null when it had none. */
  isolated: boolean | null;
  /** One per name the workflow gave `ctx.sandbox`, in the order of first use. */
  sandboxes: ContractSandbox[];
}

/** One named sandbox of a run: what it was, what happened to it, and when it went. */
export interface ContractSandbox {
  name: string;
  /** `<runId>/<name>`: what the provider knows it by. */
  label: string;
  /** What the last `ctx.sandbox` step of this name recorded (id, kind, isolated, network, mounts, limits). */
  info: SandboxInfo;
  /** Every sandbox id it had, oldest first (a restore or a rebuild makes a new one). */
  ids: string[];
  /** Attempts of its calls that found it lost. */
  losses: { seq: number; attempt: number; at: string; message: string }[];
  /** Attempts that restored it from a snapshot into a new sandbox. */
  restores: { seq: number; attempt: number; at: string; lost: string | null; id: string; snapshot: string }[];
  /** Its `snapshot` and `release` steps. */
  snapshots: { seq: number; id: string; bytes: number; at: string }[];
  /** When it was destroyed (its last call a destroy, a release or the run's cleanup), else null. */
  destroyedAt: string | null;
  destroyedBy: "destroy" | "release" | "cleanup" | null;
}

/**
 * The job the run serves, as the starter declared it (`runtime.run(…, { job: { objective,
 * acceptanceRule, owner, authority } })`, stored as `meta.job`). A field not declared is `null`.
 */
export interface ContractJob {
  /** The job's own id, when the starter gave one. */
  jobId: Json;
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
  /** The run this one was forked from (`fork`, `rerun`) and at which step, or null. */
  forkedFrom: { runId: string; fromStep: number; kind: "fork" | "rerun"; by: Actor; at: string } | null;
  /** The runs forked from this one, oldest first. */
  forks: { runId: string; fromStep: number; kind: "fork" | "rerun"; at: string }[];
  /** The versions in force at the run's last transition (each transition carries its own). */
  /** The versions the run started under (each transition carries those in force then). */
  versions: Versions;
  /** The model and prompt context: its version, the models called and a digest of each request. */
  modelAndPromptVersions: ContractModelContext;
  state: RunState;
  contractState: ContractState;
  pausedReason: PausedReason | null;
  /** The lease epoch the run reached (every claim adds one); an import keeps counting from it. */
  epoch: number;
  /** What happens to it when its parent ends while it is open; null for a top-level run. */
  parentClosePolicy: "suspend" | "cancel" | "abandon" | null;
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
  /** What keeps or deletes the run's records. */
  retentionAndDeletion: string;
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
  /**
   * The seqs of those steps: each ran under `policy`, the tool's policy in the exporting code
   * (Cairn does not store a step's policy with it; the workflow version pins the code).
   */
  steps: number[];
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
  /** How an attempt without a definite outcome is settled; null without the agent's code. */
  ambiguityRule: string | null;
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
export interface ContractRecovery extends ContractRecoveryRules {
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

/**
 * The job a run serves, as its starter declares it (`runtime.run(…, { job })`, stored as
 * `meta.job`): what the run contract's `job` section shows.
 */
export interface JobSpec {
  /** The job's own id (a ticket, an order), kept apart from the run's id and key. */
  jobId?: string;
  objective?: string;
  /** How a person decides to accept the result (`accept` / `reject`). */
  acceptanceRule?: string;
  owner?: string;
  /** A reference to what authorises the run (a ticket, a mandate). */
  authority?: string;
}
