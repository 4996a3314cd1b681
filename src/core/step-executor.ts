import { type AttemptLimits, runAttempt } from "./attempt-runner.ts";
import type { EnvelopeHost } from "./envelope-host.ts";
import { ToolFailedError } from "./errors.ts";
import type { AttemptRecord, Json, StepRecord, Usage } from "./records.ts";
import { isRetryable, type ResolvedRetryPolicy, retryDelayMs } from "./retry-policy.ts";
import { serializeError, toJson } from "./serialize.ts";

/** What one attempt sees of its step. */
export interface StepExecution {
  readonly seq: number;
  readonly attempt: number;
  readonly signal: AbortSignal;
  heartbeat(details?: Json): void;
  lastHeartbeat(): Json | undefined;
  addUsage(usage: { inputTokens: number; outputTokens: number }): void;
}

/**
 * Executes a step that has no saved result: records its start (unless a crashed execution
 * already did), runs attempts under the retry policy, and checkpoints the result or the final
 * error with a synchronous commit. Attempts, their errors and the last heartbeat are kept on
 * the step record.
 */
export async function executeStep<R>(options: {
  step: StepRecord;
  host: EnvelopeHost;
  stop: AbortSignal;
  policy: ResolvedRetryPolicy;
  limits: AttemptLimits;
  run: (execution: StepExecution) => Promise<R> | R;
}): Promise<R> {
  const { step, host, stop, policy, limits } = options;
  // An attempt that was running when its process died has no end: close it as interrupted.
  // It counts against the attempts, so a tool that kills its process cannot loop for ever.
  const dangling = step.attempts.at(-1);
  if (dangling && dangling.endedAt === null) {
    step.attempts[step.attempts.length - 1] = {
      ...dangling,
      endedAt: host.now(),
      error: { name: "AttemptInterrupted", message: "the process running this attempt stopped before it ended" },
    };
  }
  let heartbeatSave: Promise<void> = Promise.resolve();
  let heartbeatQueued = false;
  for (;;) {
    if (stop.aborted) throw stop.reason;
    const attemptNo = step.attempts.length + 1;
    if (attemptNo > policy.maximumAttempts) {
      return fail(step, host, new Error(`no attempts left (${policy.maximumAttempts} used)`));
    }
    const attempt: AttemptRecord = { attempt: attemptNo, startedAt: host.now(), endedAt: null };
    step.attempts.push(attempt);
    // The start record (for a new step) or the attempt's start (for a retry or a resumed step),
    // so a crash during the attempt shows which attempt it was. A cheap commit: the result's
    // synchronous commit flushes it.
    await host.saveStep(step, false);
    const execution: StepExecution = {
      seq: step.seq,
      attempt: attemptNo,
      signal: stop,
      heartbeat: (details) => {
        step.heartbeat = toJson(details ?? null, "heartbeat details") ?? null;
        beat();
        // Keep the latest details durable for the next attempt, one write in flight at a time.
        if (!heartbeatQueued) {
          heartbeatQueued = true;
          heartbeatSave = heartbeatSave
            .then(() => {
              heartbeatQueued = false;
              return stop.aborted ? undefined : host.saveStep(step, false);
            })
            .catch((error: unknown) => host.log("warn", "heartbeat not saved", { error: String(error) }));
        }
      },
      lastHeartbeat: () => step.heartbeat,
      addUsage: (usage) => {
        step.usage = addUsage(step.usage, usage);
      },
    };
    let beat: () => void = () => {};
    try {
      const value = await runAttempt(stop, limits, (signal, arm) => {
        beat = arm;
        return options.run({ ...execution, signal });
      });
      if (stop.aborted) throw stop.reason;
      const result = toJson(value, `the result of ${limits.label}`);
      attempt.endedAt = host.now();
      await heartbeatSave;
      step.status = "completed";
      step.result = result;
      step.endedAt = attempt.endedAt;
      await host.saveStep(step, true);
      return result as R;
    } catch (error) {
      if (stop.aborted) throw stop.reason;
      attempt.endedAt = host.now();
      attempt.error = serializeError(error);
      await heartbeatSave;
      if (!isRetryable(policy, error) || attemptNo >= policy.maximumAttempts) {
        return fail(step, host, error);
      }
      const delay = retryDelayMs(policy, attemptNo + 1, host.random());
      host.log("info", `${limits.label} attempt ${attemptNo} failed; retrying in ${delay} ms`, {
        runId: step.runId,
        seq: step.seq,
        error: attempt.error.message,
      });
      await host.saveStep(step, false);
      await host.sleep(delay, stop);
    }
  }
}

async function fail(step: StepRecord, host: EnvelopeHost, error: unknown): Promise<never> {
  const attempts = step.attempts.length;
  const final =
    step.kind === "tool"
      ? new ToolFailedError(
          `tool "${step.name}" failed after ${attempts} attempt${attempts === 1 ? "" : "s"}: ${(error as Error)?.message ?? String(error)}`,
          { tool: step.name, attempts },
          { cause: error },
        )
      : error;
  step.status = "failed";
  step.error = serializeError(final);
  step.endedAt = host.now();
  await host.saveStep(step, true);
  throw final;
}

/** Adds model usage to a step's running total. */
export function addUsage(total: Usage | undefined, usage: { inputTokens: number; outputTokens: number }): Usage {
  return {
    inputTokens: (total?.inputTokens ?? 0) + usage.inputTokens,
    outputTokens: (total?.outputTokens ?? 0) + usage.outputTokens,
    modelCalls: (total?.modelCalls ?? 0) + 1,
  };
}
