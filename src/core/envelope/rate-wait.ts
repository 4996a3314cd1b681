import { describeRateLimit, type ResolvedRateLimit } from "../rate-limits.ts";
import type { StepRecord } from "../records.ts";
import { endAttemptSpan, type SpanScope, startRateWaitSpan } from "../telemetry/spans.ts";
import type { EnvelopeHost } from "./envelope-host.ts";

/**
 * The rate limit around a step's attempts (DESIGN §4 *Rate limits*): each attempt takes the next
 * slot of the step's limit from the backend just before it begins (before its start record, so an
 * attempt that waits has written nothing yet), and waits for it in process on the host's clock.
 * The wait is logged at info, sent as a `step.rate_limited` event and, with tracing, is a span
 * under the step's; it rejects with the signal's reason when the run is stopped or cancelled.
 */
export async function waitForRateSlot(
  host: EnvelopeHost,
  step: StepRecord,
  attempt: number,
  limit: ResolvedRateLimit,
  label: string,
  signal: AbortSignal,
  trace: SpanScope | undefined,
): Promise<void> {
  const slots = host.rateLimits;
  if (!slots) return;
  if (signal.aborted) throw signal.reason;
  const slot = await slots.take(limit, host.now());
  const waitMs = Math.max(0, Math.ceil(slot - host.now()));
  if (waitMs === 0) return;
  host.log(
    "info",
    `${label}: rate limit "${limit.name}" (${describeRateLimit(limit)}) reached; attempt ${attempt} waits ${waitMs} ms for its slot`,
    { runId: step.runId, seq: step.seq, rateLimit: limit.name, waitMs },
  );
  host.emit({
    type: "step.rate_limited",
    seq: step.seq,
    attempt,
    kind: step.kind,
    name: step.name,
    rateLimit: limit.name,
    limit: limit.limit,
    periodMs: limit.periodMs,
    waitMs,
  });
  const span = startRateWaitSpan(trace, step, attempt, limit.name, waitMs);
  try {
    await host.sleep(waitMs, signal);
    endAttemptSpan(span);
  } catch (error) {
    endAttemptSpan(span, error);
    throw error;
  }
}

/**
 * A failed attempt of a step under `limit` said when to come back (`retryAfterMs`, a 429 with
 * Retry-After): the limit is held that long for every worker, not only before this step's next
 * attempt. A failure to hold it is logged, never the step's failure.
 */
export async function holdRateLimit(
  host: EnvelopeHost,
  step: StepRecord,
  limit: ResolvedRateLimit,
  retryAfterMs: number,
  label: string,
): Promise<void> {
  const slots = host.rateLimits;
  if (!slots || !(retryAfterMs > 0)) return;
  const fields = { runId: step.runId, seq: step.seq, rateLimit: limit.name, holdMs: retryAfterMs };
  try {
    const now = host.now();
    await slots.hold(limit, now + retryAfterMs, now);
    host.log(
      "warn",
      `${label}: the provider asked to retry after ${retryAfterMs} ms; rate limit "${limit.name}" is held that long for every worker`,
      fields,
    );
  } catch (error) {
    host.log("warn", `${label}: rate limit "${limit.name}" could not be held: ${(error as Error)?.message}`, fields);
  }
}
