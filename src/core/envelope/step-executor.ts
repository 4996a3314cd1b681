import { context } from "@opentelemetry/api";
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
import type { ResolvedRateLimit } from "../rate-limits.ts";
import type { AttemptRecord, Json, StepRecord } from "../records.ts";
import { holdsKnownSecret, redactKnownJson } from "../redact.ts";
import { isRetryable, type ResolvedRetryPolicy, retryDelayMs } from "../retry-policy.ts";
import { deserializeError, jsonSnapshot, serializeError } from "../serialize.ts";
import { attemptStarted } from "../telemetry/metrics.ts";
import { endAttemptSpan, type SpanScope, startAttemptSpan } from "../telemetry/spans.ts";
import { type AttemptLimits, runAttempt } from "./attempt-runner.ts";
import type { EnvelopeHost } from "./envelope-host.ts";
import type { JournalWriter } from "./journal-writer.ts";
import { holdRateLimit, waitForRateSlot } from "./rate-wait.ts";
import { Attempt, type StepExecution } from "./step-attempt.ts";
import { emitAttemptEnd, emitAttemptStart, emitRetry } from "./step-events.ts";

/** What {@link executeStep} runs, and how. */
export interface ExecuteStepOptions<R> {
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
  /** The step's span (undefined when nothing records): each attempt's span starts under it. */
  trace?: SpanScope | undefined;
  /**
   * The step's rate limit (a tool's or a model's, DESIGN §4 *Rate limits*): each attempt takes a
   * slot of it just before it begins and waits for it in process (`waitForRateSlot`); a failure
   * with `retryAfterMs` holds the limit for every worker.
   */
  rateLimit?: ResolvedRateLimit | undefined;
}

/**
 * Executes a step that has no saved result: commits the start of each attempt before it runs
 * (the first one is the step's start record), runs attempts under the retry policy, and queues
 * the result or the final error for a synchronous commit (see {@link JournalWriter}). Attempts,
 * their errors and the last heartbeat are kept on the step record.
 */
export async function executeStep<R>(options: ExecuteStepOptions<R>): Promise<R> {
  const { step, host, writer, stop, policy, limits, retryPause, effect, history } = options;
  const signal = options.attemptSignal ?? (options.cancel ? AbortSignal.any([stop, options.cancel]) : stop);
  closeDanglingAttempt(step, host, history);
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
    // The attempt's slot of the step's rate limit, before anything of the attempt is written.
    if (options.rateLimit) {
      await waitForRateSlot(host, step, attemptNo, options.rateLimit, limits.label, signal, options.trace);
    }
    const record = startAttempt(step, attemptNo, host, history);
    await writer.before(step, effect !== undefined);
    // After the start record is queued, so the previous step's result still rides on its commit.
    const pause = host.breathe?.();
    if (pause) await pause;
    // The lease, checked where it matters: between the start record's commit and the call.
    const held = host.holdLease?.();
    if (held) await held;
    if (stop.aborted) throw stop.reason;
    const retryCause = attemptNo > 1 ? causeOf(step.attempts[attemptNo - 2]) : undefined;
    attemptStarted(step.kind, retryCause !== undefined);
    const span = startAttemptSpan(options.trace, step, attemptNo, retryCause);
    try {
      const value = await attemptStep(options, record, signal, span);
      const result = succeeded(options, record, attemptNo, value);
      endAttemptSpan(span);
      return result;
    } catch (error) {
      endAttemptSpan(span, error);
      if (stop.aborted) throw stop.reason;
      failedAttempt(step, record, error, host, history);
      if (options.rateLimit) await holdRateLimit(host, step, options.rateLimit, retryAfterMs(error), limits.label);
      if (effect && !saysNotApplied(error)) {
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
      const { delay, parks } = retryDelay(options, record, error);
      if (parks && retryPause) return retryPause.park(attemptNo + 1, host.now() + delay);
      await host.sleep(delay, signal);
    }
  }
}

/**
 * The wait before the next attempt after attempt `record` failed with `error` (never shorter than
 * the provider's Retry-After), and whether the run pauses for it; logged, sent as `step.retry`,
 * and the failure queued for the journal.
 */
function retryDelay<R>(
  options: ExecuteStepOptions<R>,
  record: AttemptRecord,
  error: unknown,
): { delay: number; parks: boolean } {
  const { step, host, policy, retryPause, limits } = options;
  const attemptNo = record.attempt;
  // A provider that said when to come back (Retry-After) is not asked again sooner.
  const delay = Math.max(retryDelayMs(policy, attemptNo + 1, host.random()), retryAfterMs(error));
  const parks = retryPause !== undefined && delay >= retryPause.afterMs;
  const why = { runId: step.runId, seq: step.seq, error: record.error?.message };
  host.log(
    "info",
    `${limits.label} attempt ${attemptNo} failed; retrying in ${delay} ms${parks ? " (run paused)" : ""}`,
    why,
  );
  emitRetry(host, step, record, delay, parks);
  options.writer.later(step, false);
  return { delay, parks };
}

/**
 * An attempt that was running when its process died has no end: it is closed as interrupted. It
 * counts against the attempts, so a tool that kills its process cannot loop for ever.
 */
function closeDanglingAttempt(step: StepRecord, host: EnvelopeHost, history: HistoryMeter | undefined): void {
  const dangling = step.attempts.at(-1);
  if (dangling && dangling.endedAt === null) {
    const error = { name: "AttemptInterrupted", message: "the process running this attempt stopped before it ended" };
    step.attempts[step.attempts.length - 1] = { ...dangling, endedAt: host.now(), error };
    history?.add(jsonBytes(error), 0);
  }
}

/**
 * Runs the step's function for attempt `record` under the attempt's limits (`runAttempt`); with
 * a span, the function runs in its context (what it calls nests under it).
 */
function attemptStep<R>(
  options: ExecuteStepOptions<R>,
  record: AttemptRecord,
  signal: AbortSignal,
  span: SpanScope | undefined,
): Promise<R> {
  const { step, writer, stop, limits } = options;
  const attempt = new Attempt(step, record, writer, stop, {
    label: limits.label,
    maxPayloadBytes: options.host.maxPayloadBytes,
  });
  attempt.trace = span;
  return runAttempt(signal, limits, (attemptSignal, beat) => {
    attempt.signal = attemptSignal;
    attempt.beat = beat;
    return span ? context.with(span.context, () => options.run(attempt)) : options.run(attempt);
  });
}

/** Why an attempt is a retry: how the one before it ended (its error's code, else its name). */
function causeOf(previous: AttemptRecord | undefined): string {
  const error = previous?.error;
  return error?.code ?? error?.name ?? "unknown";
}

/** The record of attempt `attemptNo`, starting now, added to the step. */
function startAttempt(
  step: StepRecord,
  attemptNo: number,
  host: EnvelopeHost,
  history: HistoryMeter | undefined,
): AttemptRecord {
  const record: AttemptRecord = { attempt: attemptNo, startedAt: host.now(), endedAt: null };
  step.attempts.push(record);
  // A retry is an event of the history (the first attempt is the step's own).
  if (attemptNo > 1) history?.add(0, 1);
  // A new attempt of an effect is a new intent (after a "not applied" from the tool, the query or
  // an operator, each kept on the record: the attempt's error, the answers, the reconciliation).
  if (step.effect && step.effect.status !== "intended") {
    step.effect = { ...step.effect, status: "intended", settledBy: undefined, settledAt: undefined };
  }
  emitAttemptStart(host, step, record);
  return record;
}

/**
 * The attempt returned `value`: the step completes with it, as the journal keeps it, queued for a
 * synchronous commit. Throws (a failed attempt, not retried) when the value is too large for a
 * payload or for the history.
 */
function succeeded<R>(options: ExecuteStepOptions<R>, record: AttemptRecord, attemptNo: number, value: R): R {
  const { step, host, stop, limits, effect } = options;
  if (stop.aborted) throw stop.reason;
  // Too large is not retryable (PayloadTooLargeError): the step fails at once.
  const snapshot = jsonSnapshot(value, `the result of ${limits.label}`, host.maxPayloadBytes);
  // Past the history's limit: not retryable either (HistoryLimitError), the step fails at once.
  options.history?.admit(textBytes(snapshot.text), `the result of ${limits.label}`);
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
  options.writer.later(step, true);
  emitAttemptEnd(host, step, record);
  return result as R;
}

/**
 * The attempt threw `error`: it is recorded on the attempt; when the tool says for sure that its
 * effect did not happen, that is recorded too, so nothing settles it again.
 */
function failedAttempt(
  step: StepRecord,
  record: AttemptRecord,
  error: unknown,
  host: EnvelopeHost,
  history: HistoryMeter | undefined,
): void {
  record.endedAt = host.now();
  record.error = serializeError(error);
  history?.add(jsonBytes(record.error), 0);
  if (step.effect && saysNotApplied(error)) {
    step.effect = { ...step.effect, status: "not_applied", settledBy: "attempt", settledAt: record.endedAt };
  }
  emitAttemptEnd(host, step, record);
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
