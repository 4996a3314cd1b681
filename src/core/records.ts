import type { SerializedError } from "./errors.ts";
import type { PausedReason, RunState } from "./run-state.ts";

/**
 * The records a backend stores: one row per run, per transition and per step (DESIGN §7).
 * Payloads (`input`, `output`, `args`, `result`) are JSON values.
 */

/** A JSON value, as stored in the journal. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Who caused a transition. */
export interface Actor {
  kind: "worker" | "user" | "system" | "policy";
  id: string;
}

/**
 * The versions in force when a transition was made (DESIGN §3; the contract's invariant 4: a
 * resumed run checks the workflow, policy, authority, sandbox and context versions it started
 * with). The last three are absent on records written before they were kept.
 */
export interface Versions {
  workflow: string;
  policy: string | null;
  runtime: string;
  /** What authorises the runs' calls (`versions.authority` of the runtime's options), or null. */
  authority?: string | null;
  /** The sandbox its tools run in (`versions.sandbox`), or null. */
  sandbox?: string | null;
  /** The model and prompt context: `versions.context`, else the runtime's models (`name=model`, …). */
  context?: string | null;
}

/** One run of one workflow. */
export interface RunRecord {
  id: string;
  agent: string;
  workflow: string;
  /** Idempotency key for starting; unique per (agent, workflow). */
  key: string | null;
  state: RunState;
  pausedReason: PausedReason | null;
  input: Json;
  output: Json | undefined;
  error: SerializedError | undefined;
  /** Lease epoch: incremented by every claim; every owned write must carry it. */
  epoch: number;
  /** The worker holding the lease, or null. */
  leaseOwner: string | null;
  /** Epoch milliseconds at which the lease lapses, or null. */
  leaseExpiresAt: number | null;
  /** Automatic recoveries used so far (bounded by the recovery policy). */
  recoveries: number;
  /** Id of the last transition written (transition ids are 1, 2, 3 … with no gaps). */
  lastTransitionId: number;
  versions: Versions;
  /** Free-form data the starter attached (the CLI stores the module path here). */
  meta: Record<string, Json>;
  /** The run that spawned this one (`ctx.spawn`), or null. */
  parentRunId: string | null;
  /** What happens to this run when its parent ends while it is still open; null for top-level runs. */
  parentClosePolicy: ParentClosePolicy | null;
  /** A cancel or suspend asked from outside and not yet carried out (cleared by `resume`). */
  stopRequest: StopRequest | undefined;
  /** The run this one continues (`ctx.continueAsNew`), or null. */
  continuedFrom: string | null;
  /** The run that continues this one, or null. */
  continuedTo: string | null;
  /** The run this one was forked from (`fork`, `rerun`): its journal up to the step was copied. */
  forkedFrom?: ForkOrigin | undefined;
  /** The runs forked from this one, oldest first. */
  forks?: ForkRef[] | undefined;
  /**
   * What the run used (model tokens, cost, calls, steps), its children's included; written with
   * the transition that ends the run. While it runs, the steps hold the figures.
   */
  usage: RunUsage | undefined;
  /** An operator's acceptance or rejection of a COMPLETED run: kept apart from its state. */
  acceptance: AcceptanceRecord | undefined;
  /**
   * Flow control (`core/flow-control.ts`): at most `concurrencyLimit` runs with this key hold a
   * lease at once. Absent when the run has no key.
   */
  concurrencyKey?: string | undefined;
  /** The limit of `concurrencyKey`. */
  concurrencyLimit?: number | undefined;
  /** Claim order: higher first, aged by waiting (`PRIORITY_AGING_MS`). Absent when 0. */
  priority?: number | undefined;
  createdAt: number;
  updatedAt: number;
}

/** Where a forked run comes from (`Runtime.fork`, `Runtime.rerun`; DESIGN §4, "Fork and rerun"). */
export interface ForkOrigin {
  /** The source run. */
  runId: string;
  /** The first step the fork runs again: the source's steps before it were copied. */
  fromStep: number;
  /** `rerun`: a FAILED run run again from its failed step; `fork`: any other fork. */
  kind: "fork" | "rerun";
  by: Actor;
  at: number;
}

/** A fork of a run, as its source lists it. */
export interface ForkRef {
  runId: string;
  fromStep: number;
  kind: "fork" | "rerun";
  at: number;
}

/** One logged state change. */
export interface TransitionRecord {
  runId: string;
  /** 1, 2, 3 … per run, no gaps. */
  id: number;
  at: number;
  actor: Actor;
  from: RunState | null;
  to: RunState;
  pausedReason: PausedReason | null;
  reason: string;
  versions: Versions;
}

/**
 * What happens to an open child run when its parent ends: `suspend` (PAUSED suspended_orphan
 * until someone resumes or cancels it), `cancel`, or `abandon` (it goes on alone).
 */
export type ParentClosePolicy = "suspend" | "cancel" | "abandon";

/** A stop asked of a run from outside; the worker that holds the run carries it out. */
export interface StopRequest {
  kind: "cancel" | "suspend";
  by: Actor;
  reason: string;
  at: number;
}

/** What a wait waits for. */
export type WaitKind = "signal" | "user" | "timer" | "approval" | "child" | "retry";

/** How a wait ended. */
export type WaitOutcome =
  | "signalled"
  | "answered"
  | "fired"
  | "approved"
  | "denied"
  | "expired"
  | "timed_out"
  | "child_ended"
  | "closed";

/** The end of a wait: what resolved it, with what, by whom. */
export interface WaitResolution {
  outcome: WaitOutcome;
  /** The signal's payload, the answer, the child's ending (`{ state, output, error }`). */
  value?: Json;
  by?: Actor;
  /** The signal message that resolved a signal wait. */
  messageId?: string;
  note?: string;
  at: number;
}

/**
 * One thing a run waits for (DESIGN §4): a row per wait, written when the run pauses on it (or
 * resolves it at once). Approvals are waits of kind `approval`; their record is this row.
 */
export interface WaitRecord {
  runId: string;
  /** `w<seq>` for a workflow's wait; `r<seq>.<attempt>` for a retry backoff of step `seq`. */
  id: string;
  /** The step the wait belongs to. */
  seq: number;
  kind: WaitKind;
  /** The signal name, the question, the approval's action, the child run id, the tool name (retry), "sleep" (timer). */
  name: string;
  status: "open" | "resolved" | "closed";
  /**
   * Per kind: user `{ question, schema? }` (JSON Schema); approval `{ action, payload, digest,
   * approvers }`; child `{ childRunId }`; retry `{ attempt }`; timer `{ ms? }`.
   */
  details: Json;
  /** When the wait comes due: a timer fires, a retry is due, a timeout or an approval's expiry. */
  dueAt: number | null;
  resolution: WaitResolution | undefined;
  createdAt: number;
}

/** A signal in a run's inbox. */
export interface SignalRecord {
  runId: string;
  messageId: string;
  name: string;
  payload: Json;
  receivedAt: number;
  /** The wait it resolved, or null while it waits in the inbox. */
  consumedBy: string | null;
}

/** What kind of `ctx` operation a step is. */
export type StepKind = "tool" | "domain" | "llm" | "value" | "wait" | "child" | "marker" | "sandbox";

/** One attempt of a step. */
export interface AttemptRecord {
  attempt: number;
  startedAt: number;
  endedAt: number | null;
  error?: SerializedError;
  /** A sandbox call's attempt that found its sandbox lost and restored it from the run's last snapshot. */
  restored?: SandboxRestore;
}

/** A lost sandbox restored from a snapshot into a new sandbox with the same label (DESIGN §4, *Sandboxes*). */
export interface SandboxRestore {
  /** The name the workflow gave the sandbox. */
  name: string;
  /** The lost sandbox's id, when the provider still knew it. */
  lost: string | null;
  /** The new sandbox's id. */
  id: string;
  snapshot: string;
  at: number;
}

/** Token usage and cost of the model calls counted against a step. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  /** Cost in US dollars from the runtime's price table; 0 for a model it has no price for. */
  costUsd?: number;
}

/** What a run used: its steps' model usage plus its tool calls and steps (children included). */
export interface RunUsage {
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  costUsd: number;
  toolCalls: number;
  steps: number;
}

/** An operator's verdict on a COMPLETED run (`accept` / `reject`), stored apart from the run's state. */
export interface AcceptanceRecord {
  decision: "accepted" | "rejected";
  by: Actor;
  note: string;
  at: number;
}

/** Where an effect stands (DESIGN §5). */
export type EffectStatus =
  /** The intent is durable; no attempt has reached a definite outcome yet. */
  | "intended"
  /** The outside world holds the change; `receipt` says how we know. */
  | "applied"
  /** It definitely did not happen (the tool said so, the status query said so, or an operator). */
  | "not_applied"
  /** Nobody can tell: the run is NEEDS_RECONCILIATION until an operator decides. */
  | "unknown";

/**
 * The effect record of an effect tool's step (`effect` on `defineTool`): the intent, the
 * idempotency key every attempt and every replay uses, and the receipt. It lives on the step's row
 * (one row per effect) and is written, before the tool first runs, with a synchronous commit.
 */
export interface EffectRecord {
  /** `e<seq>`: what `reconcile(runId, effectId, …)` names. */
  id: string;
  /** `<agent>/<tool>`: keys are unique within it. */
  namespace: string;
  idempotencyKey: string;
  status: EffectStatus;
  /** When the intent was recorded. */
  intentAt: number;
  /** Proof of the change: what the tool's `receipt` function, the status query or the operator gave. */
  receipt: Json | undefined;
  /** How the outcome became known. */
  settledBy: "attempt" | "status" | "reconcile" | undefined;
  settledAt: number | undefined;
  /** Why the outcome is unknown, while it is (what the last attempt or the status query said). */
  unknown: string | undefined;
  /** An operator's decision (`reconcile`). */
  reconciliation: { outcome: "applied" | "not_applied"; by: Actor; at: number; note?: string } | undefined;
  /** The tool that undoes it (declared `compensate`), or null. */
  compensate: string | null;
  /** On a compensation's own effect: the seq of the effect it undoes. */
  compensates: number | undefined;
  /**
   * Every answer its status query gave, oldest first: each is part of the record, whatever
   * followed it (a retry, a cancel, an operator's decision). Absent on records written before
   * answers were kept.
   */
  statusAnswers?: StatusAnswer[];
}

/** One answer of an effect's status query (DESIGN §5). */
export interface StatusAnswer {
  /** When it answered. */
  at: number;
  /** The attempt whose outcome was asked about. */
  attempt: number;
  /** What it said. A query that threw, or gave no answer in time, counts as `unknown`. */
  outcome: "applied" | "not_applied" | "unknown";
  /** The query's note on an `unknown`, or why the answer counts as `unknown`. */
  note?: string;
}

/** One journaled `ctx` operation. */
export interface StepRecord {
  runId: string;
  /** Call order within the run, taken when the `ctx` method is called. */
  seq: number;
  kind: StepKind;
  name: string;
  status: "started" | "completed" | "failed";
  /** sha-256 of the canonical JSON of the arguments. */
  argsDigest: string;
  args: Json | undefined;
  result: Json | undefined;
  error: SerializedError | undefined;
  attempts: AttemptRecord[];
  /** Latest heartbeat details, handed to the next attempt. */
  heartbeat: Json | undefined;
  usage: Usage | undefined;
  /** The effect record, for a step of an effect tool. */
  effect?: EffectRecord | undefined;
  startedAt: number;
  endedAt: number | null;
  /** The lease epoch under which the step was last written. */
  epoch: number;
}
