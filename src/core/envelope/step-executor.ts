import {
  type EffectSpec,
  lastAttemptOpen,
  recordSettlement,
  type Settlement,
  saysNotApplied,
  settleOpenAttempt,
} from "../effect-steps.ts";
import { ToolFailedError } from "../errors.ts";
import { type HistoryMeter, jsonBytes, textBytes } from "../history-meter.ts";
import type { AttemptRecord, Json, StepRecord, Usage } from "../records.ts";
import { holdsKnownSecret, redactKnownJson } from "../redact.ts";
import { isRetryable, type ResolvedRetryPolicy, retryDelayMs } from "../retry-policy.ts";
import { deserializeError, jsonSnapshot, serializeError, toJson } from "../serialize.ts";
import { type AttemptLimits, runAttempt } from "./attempt-runner.ts";
import type { EnvelopeHost } from "./envelope-host.ts";
import type { JournalWriter } from "./journal-writer.ts";

/** What one attempt sees of its step. */
export interface StepExecution {
  readonly seq: number;
  readonly attempt: number;
  readonly signal: AbortSignal;
  heartbeat(details?: Json): void;
  lastHeartbeat(): Json | undefined;
  addUsage(usage: { inputTokens: number; outputTokens: number; costUsd?: number }): void;
  /** The effect's idempotency key, for a step of an effect tool. */
  readonly idempotencyKey: string | undefined;
}

/** One attempt of a step: what the step's function sees through its context. */
class Attempt implements StepExecution {
  signal: AbortSignal;
  /** Re-arms the heartbeat timeout; set by the attempt runner. */
  beat: () => void = noop;
  readonly #step: StepRecord;
  readonly #record: AttemptRecord;
  readonly #writer: JournalWriter;
  readonly #limits: { label: string; maxPayloadBytes: number };
  /** The run's stop signal: once it fired, this execution writes nothing more. */
  readonly #stop: AbortSignal;
  constructor(
    step: StepRecord,
    record: AttemptRecord,
    writer: JournalWriter,
    stop: AbortSignal,
    limits: { label: string; maxPayloadBytes: number },
  ) {
    this.#step = step;
    this.#record = record;
    this.#writer = writer;
    this.signal = stop;
    this.#stop = stop;
    this.#limits = limits;
  }

  get seq(): number {
    return this.#step.seq;
  }

  get attempt(): number {
    return this.#record.attempt;
  }

  heartbeat(details?: Json): void {
    // An attempt that already ended (it timed out but its function goes on) must not overwrite
    // the details the next attempt is using; nor may one the run was stopped under (a tool that
    // ignored its signal past a cancel's grace), whose step is settled by the worker since.
    if (this.#record.endedAt !== null || this.#stop.aborted) return;
    this.#step.heartbeat =
      toJson(details ?? null, `the heartbeat details of ${this.#limits.label}`, this.#limits.maxPayloadBytes) ?? null;
    this.beat();
    this.#writer.later(this.#step, false);
  }

  lastHeartbeat(): Json | undefined {
    return this.#step.heartbeat;
  }

  get idempotencyKey(): string | undefined {
    return this.#step.effect?.idempotencyKey;
  }

  addUsage(usage: { inputTokens: number; outputTokens: number; costUsd?: number }): void {
    this.#step.usage = addUsage(this.#step.usage, usage);
  }
}

/**
 * Executes a step that has no saved result: commits the start of each attempt before it runs
 * (the first one is the step's start record), runs attempts under the retry policy, and queues
 * the result or the final error for a synchronous commit (see {@link JournalWriter}). Attempts,
 * their errors and the last heartbeat are kept on the step record.
 */
export async function executeStep<R>(options: {
  step: StepRecord;
  host: EnvelopeHost;
  writer: JournalWriter;
  /**
   * The run's history size: a result that would take it past `maxHistoryBytes` fails the step
   * (not retried); errors and retries are counted.
   */
  history?: HistoryMeter;
  stop: AbortSignal;
  policy: ResolvedRetryPolicy;
  limits: AttemptLimits;
  run: (execution: StepExecution) => Promise<R> | R;
  /**
   * Fired when the run is cancelled: attempts see it (their signal fires) and an attempt that
   * then fails ends the step (no retry); a result that still arrives is recorded. `stop`, by
   * contrast, discards everything.
   */
  cancel?: AbortSignal;
  /**
   * What attempts see: `stop` and `cancel` together. Given by a caller that runs many steps under
   * the same two signals, so that they are not combined again for every step.
   * @default AbortSignal.any([stop, cancel]), or `stop` without `cancel`
   */
  attemptSignal?: AbortSignal;
  /**
   * Long backoffs: a retry delay of at least `afterMs` is not slept in memory; `park(attempt,
   * dueAt)` pauses the run on a durable timer instead (it never resolves in this execution) and
   * `wait(attempt)` finds, on a later execution, the timer for that attempt.
   */
  retryPause?: {
    afterMs: number;
    park(attempt: number, dueAt: number): Promise<never>;
    wait(attempt: number): { status: "open" | "resolved" | "closed"; dueAt: number | null } | undefined;
  };
  /**
   * The step is an effect (DESIGN §5): its intent is committed synchronously before each attempt,
   * and an attempt that ends without a definite outcome is settled (status query, or
   * NEEDS_RECONCILIATION) before anything else — never silently run again.
   */
  effect?: EffectSpec | undefined;
}): Promise<R> {
  const { step, host, writer, stop, policy, limits, retryPause, effect, history } = options;
  const signal = options.attemptSignal ?? (options.cancel ? AbortSignal.any([stop, options.cancel]) : stop);
  // An attempt that was running when its process died has no end: close it as interrupted.
  // It counts against the attempts, so a tool that kills its process cannot loop for ever.
  const dangling = step.attempts.at(-1);
  if (dangling && dangling.endedAt === null) {
    const error = { name: "AttemptInterrupted", message: "the process running this attempt stopped before it ended" };
    step.attempts[step.attempts.length - 1] = { ...dangling, endedAt: host.now(), error };
    history?.add(jsonBytes(error), 0);
  }
  if (effect) {
    if (!step.effect) step.effect = effect.intent();
    // An attempt of an earlier execution left the outcome open: settle it before anything else.
    if (lastAttemptOpen(step)) {
      const settled = await settle(effect, step, stop, limits.label, host, !options.cancel?.aborted);
      if (settled.outcome === "applied") return applied(step, host, writer, settled, history) as R;
      if (settled.outcome === "unknown") return unresolved(effect, step, writer, settled, host);
      // Not applied: recorded, and the loop below makes the next attempt (a new intent).
      recordSettlement(step, settled, host.now());
      if (settled.answer) writer.later(step, false);
    }
  }
  for (;;) {
    if (stop.aborted) throw stop.reason;
    if (options.cancel?.aborted) throw options.cancel.reason;
    const attemptNo = step.attempts.length + 1;
    if (attemptNo > policy.maximumAttempts) {
      return fail(step, host, writer, new Error(`no attempts left (${policy.maximumAttempts} used)`), history);
    }
    // Resumed while the durable backoff before this attempt is still running: pause on it again.
    const pending = retryPause?.wait(attemptNo);
    if (retryPause && pending?.status === "open" && pending.dueAt !== null) {
      return retryPause.park(attemptNo, pending.dueAt);
    }
    const record: AttemptRecord = { attempt: attemptNo, startedAt: host.now(), endedAt: null };
    step.attempts.push(record);
    // A retry is an event of the history (the first attempt is the step's own).
    if (attemptNo > 1) history?.add(0, 1);
    // A new attempt of an effect is a new intent (after a "not applied" from the tool, the query or
    // an operator, each kept on the record: the attempt's error, the answers, the reconciliation).
    if (step.effect && step.effect.status !== "intended") {
      step.effect = { ...step.effect, status: "intended", settledBy: undefined, settledAt: undefined };
    }
    await writer.before(step, effect !== undefined);
    // After the start record is queued, so the previous step's result still rides on its commit.
    const pause = host.breathe?.();
    if (pause) await pause;
    // The lease, checked where it matters: between the start record's commit and the call.
    const held = host.holdLease?.();
    if (held) await held;
    if (stop.aborted) throw stop.reason;
    const attempt = new Attempt(step, record, writer, stop, {
      label: limits.label,
      maxPayloadBytes: host.maxPayloadBytes,
    });
    try {
      const value = await runAttempt(signal, limits, (attemptSignal, beat) => {
        attempt.signal = attemptSignal;
        attempt.beat = beat;
        return options.run(attempt);
      });
      if (stop.aborted) throw stop.reason;
      // Too large is not retryable (PayloadTooLargeError): the step fails at once.
      const snapshot = jsonSnapshot(value, `the result of ${limits.label}`, host.maxPayloadBytes);
      // Past the history's limit: not retryable either (HistoryLimitError), the step fails at once.
      history?.admit(textBytes(snapshot.text), `the result of ${limits.label}`);
      // A secret the tool resolved (ctx.secret) or the environment holds is not journaled, and the
      // workflow gets what the journal keeps, as a replay would.
      const result = holdsKnownSecret(snapshot.text) ? redactKnownJson(snapshot.json) : snapshot.json;
      record.endedAt = host.now();
      step.status = "completed";
      step.result = result;
      step.endedAt = record.endedAt;
      if (step.effect && effect) {
        step.effect = {
          ...step.effect,
          status: "applied",
          receipt: effect.receipt(value, attemptNo),
          settledBy: "attempt",
          settledAt: record.endedAt,
          unknown: undefined,
        };
      }
      writer.later(step, true);
      return result as R;
    } catch (error) {
      if (stop.aborted) throw stop.reason;
      record.endedAt = host.now();
      record.error = serializeError(error);
      history?.add(jsonBytes(record.error), 0);
      if (step.effect && saysNotApplied(error)) {
        // The tool says the effect did not happen: recorded, so nothing settles it again.
        step.effect = { ...step.effect, status: "not_applied", settledBy: "attempt", settledAt: record.endedAt };
      } else if (effect && !saysNotApplied(error)) {
        // The attempt may have applied the effect: settle that before retrying or failing.
        writer.later(step, false);
        // A cancelled run runs nothing again: the outcome must be known without another attempt.
        const settled = await settle(effect, step, stop, limits.label, host, !options.cancel?.aborted);
        if (settled.outcome === "applied") return applied(step, host, writer, settled, history) as R;
        if (settled.outcome === "unknown") return unresolved(effect, step, writer, settled, host);
        // The query said it did not happen: recorded before the retry's new intent, or the failure.
        recordSettlement(step, settled, host.now());
      }
      if (options.cancel?.aborted || !isRetryable(policy, error) || attemptNo >= policy.maximumAttempts) {
        return fail(step, host, writer, error, history);
      }
      // A provider that said when to come back (Retry-After) is not asked again sooner.
      const delay = Math.max(retryDelayMs(policy, attemptNo + 1, host.random()), retryAfterMs(error));
      if (retryPause && delay >= retryPause.afterMs) {
        host.log("info", `${limits.label} attempt ${attemptNo} failed; retrying in ${delay} ms (run paused)`, {
          runId: step.runId,
          seq: step.seq,
          error: record.error.message,
        });
        writer.later(step, false);
        return retryPause.park(attemptNo + 1, host.now() + delay);
      }
      host.log("info", `${limits.label} attempt ${attemptNo} failed; retrying in ${delay} ms`, {
        runId: step.runId,
        seq: step.seq,
        error: record.error.message,
      });
      writer.later(step, false);
      await host.sleep(delay, signal);
    }
  }
}

/** The wait an error asks for before a retry (`ModelUnavailableError.retryAfterMs`), else 0. */
function retryAfterMs(error: unknown): number {
  const ms = (error as { retryAfterMs?: unknown } | null)?.retryAfterMs;
  return typeof ms === "number" && Number.isFinite(ms) && ms > 0 ? Math.ceil(ms) : 0;
}

function fail(
  step: StepRecord,
  host: EnvelopeHost,
  writer: JournalWriter,
  error: unknown,
  history: HistoryMeter | undefined,
): never {
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
  history?.add(jsonBytes(step.error), 0);
  step.endedAt = host.now();
  writer.later(step, true);
  // The workflow gets what a replay gives it (the error rebuilt from its journal form), so code
  // that branches on the error takes the same branch both times, and never sees what the
  // journal keeps out (credentials).
  throw deserializeError(step.error);
}

async function settle(
  effect: EffectSpec,
  step: StepRecord,
  signal: AbortSignal,
  label: string,
  host: EnvelopeHost,
  retrying: boolean,
): Promise<Settlement> {
  const settled = await settleOpenAttempt(effect, step, {
    signal,
    label,
    maxPayloadBytes: host.maxPayloadBytes,
    now: () => host.now(),
    retrying,
  });
  host.log("info", `${label}: an attempt of unknown outcome was settled: ${settled.outcome}`, {
    runId: step.runId,
    seq: step.seq,
  });
  return settled;
}

/** The status query says the effect happened: the step completes with what it answered. */
function applied(
  step: StepRecord,
  host: EnvelopeHost,
  writer: JournalWriter,
  settled: Extract<Settlement, { outcome: "applied" }>,
  history: HistoryMeter | undefined,
): Json {
  history?.add(jsonBytes(settled.result), 0);
  recordSettlement(step, settled, host.now());
  writer.later(step, true);
  return settled.result;
}

/** Nobody can tell whether the effect happened: record that, then stop for an operator. */
async function unresolved(
  effect: EffectSpec,
  step: StepRecord,
  writer: JournalWriter,
  settled: Extract<Settlement, { outcome: "unknown" }>,
  host: EnvelopeHost,
): Promise<never> {
  recordSettlement(step, settled, host.now());
  writer.later(step, true);
  await writer.flush();
  return effect.unresolved(step, settled.why);
}

function noop(): void {}

/** Adds model usage to a step's running total. */
export function addUsage(
  total: Usage | undefined,
  usage: { inputTokens: number; outputTokens: number; costUsd?: number },
): Usage {
  const cost = (total?.costUsd ?? 0) + (usage.costUsd ?? 0);
  return {
    inputTokens: (total?.inputTokens ?? 0) + usage.inputTokens,
    outputTokens: (total?.outputTokens ?? 0) + usage.outputTokens,
    modelCalls: (total?.modelCalls ?? 0) + 1,
    ...(cost > 0 || total?.costUsd !== undefined || usage.costUsd !== undefined
      ? { costUsd: Math.round(cost * 1e9) / 1e9 }
      : {}),
  };
}
