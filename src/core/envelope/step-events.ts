import type { AttemptRecord, StepRecord } from "../records.ts";
import { redactText } from "../redact.ts";
import type { EnvelopeHost } from "./envelope-host.ts";

/**
 * The live events of a step's attempts (`step.start`, `step.end`, `step.retry`; see
 * core/events.ts): what `cairn run` prints as a run goes. Not journaled.
 */

/** Attempt `record` of `step` begins (its start record is about to be committed, then its call made). */
export function emitAttemptStart(host: EnvelopeHost, step: StepRecord, record: AttemptRecord): void {
  host.emit({ type: "step.start", seq: step.seq, attempt: record.attempt, kind: step.kind, name: step.name });
}

/** Attempt `record` of `step` ended (its error, if any, is on the record). */
export function emitAttemptEnd(host: EnvelopeHost, step: StepRecord, record: AttemptRecord): void {
  const error = record.error?.message;
  host.emit({
    type: "step.end",
    seq: step.seq,
    attempt: record.attempt,
    kind: step.kind,
    name: step.name,
    status: record.error ? "failed" : "completed",
    durationMs: Math.max(0, (record.endedAt ?? host.now()) - record.startedAt),
    ...(error !== undefined && { error: redactText(error) }),
  });
}

/** Attempt `record` of `step` failed; the next one begins after `delayMs` (the run paused, or not). */
export function emitRetry(
  host: EnvelopeHost,
  step: StepRecord,
  record: AttemptRecord,
  delayMs: number,
  paused: boolean,
): void {
  host.emit({
    type: "step.retry",
    seq: step.seq,
    attempt: record.attempt,
    kind: step.kind,
    name: step.name,
    error: redactText(record.error?.message ?? "the attempt failed"),
    delayMs,
    paused,
  });
}
