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

/** The versions in force when a transition was made. */
export interface Versions {
  workflow: string;
  policy: string | null;
  runtime: string;
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
  createdAt: number;
  updatedAt: number;
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

/** What kind of `ctx` operation a step is. */
export type StepKind = "tool" | "domain" | "llm" | "value" | "wait" | "child" | "marker";

/** One attempt of a step. */
export interface AttemptRecord {
  attempt: number;
  startedAt: number;
  endedAt: number | null;
  error?: SerializedError;
}

/** Token usage of model calls counted against a step. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
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
  startedAt: number;
  endedAt: number | null;
  /** The lease epoch under which the step was last written. */
  epoch: number;
}
