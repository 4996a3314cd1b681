import type { Json } from "./records.ts";

/**
 * Parts of the run contract (`run-contract.ts`) added for the Agent Run Contract template
 * (issue 24): the model and prompt context, the retry and timeout rules, what a failure does and
 * how an operator stops a run, and the run's inbox of signals.
 */

/** The models and prompts a run used (the template's `model_and_prompt_versions`). */
export interface ContractModelContext {
  /** `versions.context` the run started under, or null. */
  context: string | null;
  /** The models called, in the order of their first call. */
  models: string[];
  /** Each model call: its step, the model and the digest of its request (prompt, messages, options). */
  prompts: { seq: number; model: string; digest: string }[];
}

/** The retry and timeout rules (the template's `retry_and_timeout`); per tool figures are in `retries`. */
export interface ContractRetryAndTimeout {
  retryableFailures: string;
  backoffAndJitter: string;
  /** A backoff at least this long is a durable pause (awaiting_retry), not a wait in process. */
  retryPauseThresholdMs: number;
  /** The runtime's bound on each model call, or null (each model's own). */
  modelTimeoutMs: number | null;
  toolTimeouts: string;
  /** A bound on the whole run: Cairn has none but a `wallTimeMs` budget, so null. */
  runTimeoutMs: null;
  /** How long a cancelled run's tools have, after their abort signal, before the worker ends it. */
  cancellationGraceMs: number;
}

/** What Cairn does on a process or dependency failure, and how an operator stops the run. */
export interface ContractRecoveryRules {
  processFailureAction: string;
  dependencyFailureAction: string;
  operatorStopPath: string;
}

/** One signal of the run's inbox. */
export interface ContractSignal {
  messageId: string;
  name: string;
  payload: Json;
  receivedAt: string;
  /** The wait it resolved, or null while it waits in the inbox. */
  consumedBy: string | null;
}
