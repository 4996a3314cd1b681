import type { EffectSpec } from "../effect-steps.ts";
import { textBytes } from "../history-meter.ts";
import type { ResolvedRateLimit } from "../rate-limits.ts";
import type { Json, StepKind, StepRecord, WaitRecord } from "../records.ts";
import { redactJson } from "../redact.ts";
import { type RetryPolicy, resolveRetryPolicy } from "../retry-policy.ts";
import { deserializeError, jsonSnapshot } from "../serialize.ts";
import { stepEnded } from "../telemetry/metrics.ts";
import { endStepSpan, startStepSpan } from "../telemetry/spans.ts";
import { digestText } from "./args-digest.ts";
import type { EnvelopeState } from "./envelope-state.ts";
import type { BegunStep } from "./replay-cursor.ts";
import type { StepExecution } from "./step-attempt.ts";
import { executeStep } from "./step-executor.ts";

/** What a journaled step runs, and under which limits. */
export interface StepSpec<R> {
  policy: RetryPolicy | undefined;
  startToCloseTimeoutMs: number | undefined;
  heartbeatTimeoutMs: number | undefined;
  run: (attempt: StepExecution) => Promise<R> | R;
  /** The step is an effect: its spec, built once its seq is known. */
  effect: ((seq: number) => EffectSpec) | undefined;
  /** The rate limit its attempts are under (a tool's or a model's). @default none */
  rateLimit?: ResolvedRateLimit | undefined;
}

/**
 * A journaled step: replayed from its saved result, or executed with start and result records
 * (`executeStep`). `begun` is given when its number was taken already (after an approval's).
 * While it executes it counts as in flight (the run neither pauses nor stops a cancel on it);
 * an effect step is also waited for before the run completes.
 */
export async function runStep<R>(
  x: EnvelopeState,
  kind: StepKind,
  name: string,
  args: unknown,
  spec: StepSpec<R>,
  begun?: BegunStep,
): Promise<R> {
  const { seq, recorded } = begun ?? x.begin(kind, name);
  const snapshot = argsSnapshot(x, kind, name, args, seq);
  const argsDigest = digestText(snapshot.text);
  if (!recorded) {
    x.meter.admit(textBytes(snapshot.text), `the arguments of ${kind} "${name}" (run ${x.run.id}, step ${seq})`);
  }
  if (recorded) {
    if (recorded.argsDigest !== argsDigest) {
      x.host.log("warn", `step ${seq} (${kind} "${name}") is replayed with different arguments`, {
        runId: x.run.id,
        seq,
      });
    }
    if (recorded.status === "completed") return recorded.result as R;
    if (recorded.status === "failed") throw replayedFailure(recorded);
  }
  const step: StepRecord = recorded
    ? { ...recorded, attempts: [...recorded.attempts] }
    : x.newStep(seq, kind, name, snapshot.json ?? null, x.host.now(), argsDigest);
  x.enter(step);
  let parked = false;
  const span = startStepSpan(x.trace, step);
  try {
    const executing = executeStep<R>({
      step,
      host: x.host,
      writer: x.writer,
      history: x.meter,
      stop: x.stopped.signal,
      cancel: x.cancelled.signal,
      attemptSignal: x.attempts.signal,
      policy: resolveRetryPolicy(spec.policy),
      limits: {
        startToCloseTimeoutMs: spec.startToCloseTimeoutMs,
        heartbeatTimeoutMs: spec.heartbeatTimeoutMs,
        label: `${kind} "${name}" (run ${x.run.id}, step ${seq})`,
      },
      run: spec.run,
      trace: span,
      effect: spec.effect?.(seq),
      rateLimit: spec.rateLimit,
      retryPause: {
        afterMs: x.host.retryPauseThresholdMs,
        wait: (attempt) => x.waits.stored(`r${seq}.${attempt}`),
        park: (attempt, dueAt) => {
          // The step is no longer running: it waits on a durable timer, like a wait step.
          parked = true;
          x.leave(seq);
          return x.waits.park(retryWait(x, step, attempt, dueAt));
        },
      },
    });
    if (!spec.effect) return await executing;
    x.effectsInFlight.add(executing);
    try {
      return await executing;
    } finally {
      x.effectsInFlight.delete(executing);
    }
  } finally {
    if (!parked) x.leave(seq);
    if (step.status !== "started") x.governance.settled(step);
    endStepSpan(span, step, parked);
    stepEnded(step, parked);
  }
}

/**
 * The step's arguments as the journal keeps them; a model request without the credentials it may
 * quote (the provider gets it whole).
 */
function argsSnapshot(
  x: EnvelopeState,
  kind: StepKind,
  name: string,
  args: unknown,
  seq: number,
): { json: Json | undefined; text: string } {
  const snapshot = jsonSnapshot(
    args ?? null,
    `the arguments of ${kind} "${name}" (run ${x.run.id}, step ${seq})`,
    x.host.maxPayloadBytes,
  );
  return kind === "llm" ? redactedSnapshot(snapshot) : snapshot;
}

/** The durable timer a long retry backoff of `step` waits on (the run pauses, awaiting_retry). */
function retryWait(x: EnvelopeState, step: StepRecord, attempt: number, dueAt: number): WaitRecord {
  const { seq, name } = step;
  return {
    runId: x.run.id,
    id: `r${seq}.${attempt}`,
    seq,
    kind: "retry",
    name,
    status: "open",
    // The kind of the step retried, for listings: a model call's retry is not a tool's.
    details: { attempt, stepKind: step.kind },
    dueAt,
    resolution: undefined,
    createdAt: x.host.now(),
  };
}

/** `snapshot` with credentials redacted ({@link redactJson}); itself when it holds none. */
function redactedSnapshot(snapshot: { json: Json | undefined; text: string }): {
  json: Json | undefined;
  text: string;
} {
  const json = redactJson(snapshot.json);
  return json === snapshot.json ? snapshot : { json, text: JSON.stringify(json) };
}

/** The error a failed step threw, rebuilt from the journal for a replay (its class kept). */
function replayedFailure(step: StepRecord): Error {
  return deserializeError(step.error ?? { name: "Error", message: `step ${step.seq} failed` });
}
