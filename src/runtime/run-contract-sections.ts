import type { AgentDefinition } from "../core/agent-definition.ts";
import type { RunRecord, StepRecord } from "../core/records.ts";
import type { RetentionPolicy } from "../core/retention.ts";
import type { ContractModelContext, ContractRecoveryRules, ContractRetryAndTimeout } from "../core/run-contract.ts";

/**
 * The parts of a run contract that say what Cairn does rather than what the run did (the
 * template's retry and timeout rules, each effect's ambiguity rule, what a process or dependency
 * failure does, the operator's stop path), and the model and prompt versions a run used: filled
 * from the run's records and the exporting runtime's settings (`ContractSettings`).
 */

/** The settings of the exporting runtime that a contract states (its workers' and models'). */
export interface ContractSettings {
  cancelGraceMs: number;
  maxAutoRecoveries: number;
  leaseMs: number;
  retryPauseThresholdMs: number;
  /** The runtime's own bound on model calls, or null (each model's own then applies). */
  modelTimeoutMs: number | null;
  /** The runtime's retention (`RuntimeOptions.retention`), when it has one. */
  retention?: RetentionPolicy | undefined;
}

/** What a runtime with no options of its own sets (the defaults of `worker-options.ts` and the runtime). */
export const DEFAULT_CONTRACT_SETTINGS: ContractSettings = {
  cancelGraceMs: 5000,
  maxAutoRecoveries: 3,
  leaseMs: 15_000,
  retryPauseThresholdMs: 5000,
  modelTimeoutMs: null,
};

/** The models the run called and the digests of what it asked them, with the context version it started under. */
export function modelContextOf(run: RunRecord, steps: readonly StepRecord[]): ContractModelContext {
  const calls = steps.filter((s) => s.kind === "llm");
  return {
    context: run.versions.context ?? null,
    models: [...new Set(calls.map((s) => s.name))],
    prompts: calls.map((s) => ({ seq: s.seq, model: s.name, digest: s.argsDigest })),
  };
}

/** The retry and timeout rules the run is under (the per-tool policies are in `retries`). */
export function retryAndTimeoutOf(settings: ContractSettings): ContractRetryAndTimeout {
  return {
    retryableFailures:
      "any error a tool, model or domain call throws, except NonRetryableError, EffectRefusedError and Cairn errors whose class is not retryable, and the tool's nonRetryableErrors; a model call retries rate limits, overload and network failures only",
    backoffAndJitter:
      "per tool (retries[].policy): the first retry after initialIntervalMs, each later one backoffCoefficient times longer up to maximumIntervalMs, each delay varied by ±jitter",
    retryPauseThresholdMs: settings.retryPauseThresholdMs,
    modelTimeoutMs: settings.modelTimeoutMs,
    toolTimeouts: "per tool (retries[].startToCloseTimeoutMs, retries[].heartbeatTimeoutMs)",
    runTimeoutMs: null,
    cancellationGraceMs: settings.cancelGraceMs,
  };
}

/** What happens to the run on a process or dependency failure, and how an operator stops it. */
export function recoveryRulesOf(run: RunRecord, settings: ContractSettings): ContractRecoveryRules {
  return {
    processFailureAction: `a worker lost with the run (its lease of ${settings.leaseMs} ms lapsed, or its process is gone from its host) leaves it INTERRUPTED; workers resume it by themselves up to ${settings.maxAutoRecoveries} times (${run.recoveries} used), then it waits for \`cairn resume ${run.id}\`; the attempt that was cut off is closed as interrupted and counts against its tool's attempts`,
    dependencyFailureAction:
      "a failing tool, model or domain call is retried under its policy; one that fails for good fails its step, and the run FAILED unless the workflow catches the error; a storage outage stops the run in its worker (INTERRUPTED, resumed from its last commit); an effect whose outcome is unknown is never run blind (see effects[].ambiguityRule)",
    operatorStopPath: `cairn cancel ${run.id} (POST /api/runs/${run.id}/cancel): a paused run is cancelled at once, a running one has its tools' abort signal fire and ends CANCELLED within ${settings.cancelGraceMs} ms, with what was in flight recorded; effects are compensated under the run's compensate mode; a run whose effect is unknown waits for \`cairn reconcile\` first`,
  };
}

/** How an effect of unknown outcome is settled, from its tool's declaration (null without the agent's code). */
export function ambiguityRuleOf(step: StepRecord, agent: AgentDefinition | undefined): string | null {
  const effect = agent?.tools[step.name]?.effect;
  if (!effect) return null;
  if (effect.status) {
    return "an attempt without a definite outcome asks the tool's status query: applied is recorded and not run again, not_applied is retried with the same key, unknown goes NEEDS_RECONCILIATION";
  }
  if (effect.idempotent) {
    return "declared idempotent: an attempt without a definite outcome is retried with the same idempotency key (a cancelled run does not run it again: unknown, NEEDS_RECONCILIATION)";
  }
  return "no status query and not idempotent: an attempt without a definite outcome leaves the effect unknown and the run NEEDS_RECONCILIATION until an operator reconciles it";
}
