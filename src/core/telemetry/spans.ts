import {
  type Attributes,
  type Context,
  type Link,
  type Span,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { RunRecord, StepRecord } from "../records.ts";

/**
 * Cairn's spans (DESIGN §7c), through the OpenTelemetry API only: the application registers an
 * SDK and exporter, or nothing, and then every span here is the API's no-op one. Nothing builds
 * attributes for a span that does not record.
 *
 *   run execution   `run <agent>.<workflow>`   one per time a worker drives the run
 *     step          `<kind> <name>`           one per step executed (not replayed)
 *       attempt     `attempt <n>`             one per attempt; `cairn.retry` from the second on
 *       rate wait   `rate limit <name>`       an attempt's wait for a slot of a rate limit, if any
 */

/**
 * The tracer of the provider registered now. Asked once per run start and execution (the API's
 * proxy tracer would keep the first provider it found for ever); steps use their execution's.
 */
function currentTracer(): Tracer {
  return trace.getTracer("cairn");
}

/** Cairn's span attributes. */
export const ATTR = {
  runId: "cairn.run.id",
  agent: "cairn.agent",
  workflow: "cairn.workflow",
  workerId: "cairn.worker.id",
  epoch: "cairn.run.epoch",
  resumed: "cairn.run.resumed",
  parentRunId: "cairn.parent.run.id",
  runState: "cairn.run.state",
  pausedReason: "cairn.run.paused_reason",
  stepIndex: "cairn.step.index",
  stepName: "cairn.step.name",
  stepKind: "cairn.step.kind",
  stepStatus: "cairn.step.status",
  attempt: "cairn.attempt",
  attempts: "cairn.step.attempts",
  retry: "cairn.retry",
  retryCause: "cairn.retry.cause",
  effectKey: "cairn.effect.key",
  effectStatus: "cairn.effect.status",
  errorCode: "cairn.error.code",
  rateLimit: "cairn.rate_limit",
  rateLimitWaitMs: "cairn.rate_limit.wait_ms",
} as const;

/**
 * The options of the spans under a run execution: internal, nothing else. One object for all (the
 * SDK only reads it), so that a step's two spans allocate none; attributes are set after the start
 * because the SDK copies and checks attributes given at the start twice.
 */
const INTERNAL: SpanOptions = Object.freeze({ kind: SpanKind.INTERNAL });

/** `attempt <n>`, made once for the attempts most steps have. */
const ATTEMPT_NAMES = Array.from({ length: 11 }, (_, n) => `attempt ${n}`);

/** A span and the context whose active span it is (the parent of what starts under it). */
export interface SpanScope {
  readonly span: Span;
  readonly context: Context;
  /** The tracer spans under it come from. */
  readonly tracer: Tracer;
}

/**
 * The span of one execution of `run` by `workerId`, under `parent` (the run's stored trace
 * context), linked to `link` (a child run's: the parent's span that spawned it).
 */
export function startRunSpan(run: RunRecord, workerId: string, parent: Context, link?: Link): SpanScope {
  const tracer = currentTracer();
  const span = tracer.startSpan(
    `run ${run.agent}.${run.workflow}`,
    link ? { kind: SpanKind.INTERNAL, links: [link] } : { kind: SpanKind.INTERNAL },
    parent,
  );
  if (span.isRecording()) {
    const attributes: Attributes = {
      [ATTR.runId]: run.id,
      [ATTR.agent]: run.agent,
      [ATTR.workflow]: run.workflow,
      [ATTR.workerId]: workerId,
      [ATTR.epoch]: run.epoch,
      [ATTR.resumed]: run.state !== "PENDING",
    };
    if (run.parentRunId !== null) attributes[ATTR.parentRunId] = run.parentRunId;
    span.setAttributes(attributes);
  }
  return { span, context: trace.setSpan(parent, span), tracer };
}

/**
 * The span of step `step` executing under `parent` (the run execution's scope); undefined when
 * the execution's span does not record (no SDK), so that nothing more is spent on its steps.
 */
export function startStepSpan(parent: SpanScope | undefined, step: StepRecord): SpanScope | undefined {
  if (!parent?.span.isRecording()) return undefined;
  const { tracer } = parent;
  const span = tracer.startSpan(`${step.kind} ${step.name}`, INTERNAL, parent.context);
  // One by one: no object to build for the SDK to walk again.
  span.setAttribute(ATTR.runId, step.runId);
  span.setAttribute(ATTR.stepIndex, step.seq);
  span.setAttribute(ATTR.stepName, step.name);
  span.setAttribute(ATTR.stepKind, step.kind);
  return { span, context: trace.setSpan(parent.context, span), tracer };
}

/** Ends a step's span with how the step ended (its status, attempts, effect, error code). */
export function endStepSpan(scope: SpanScope | undefined, step: StepRecord, parked: boolean): void {
  if (!scope) return;
  const { span } = scope;
  span.setAttribute(ATTR.stepStatus, parked ? "awaiting_retry" : step.status);
  span.setAttribute(ATTR.attempts, step.attempts.length);
  if (step.effect) {
    span.setAttribute(ATTR.effectKey, step.effect.idempotencyKey);
    span.setAttribute(ATTR.effectStatus, step.effect.status);
  }
  if (step.usage) {
    span.setAttribute("gen_ai.usage.input_tokens", step.usage.inputTokens);
    span.setAttribute("gen_ai.usage.output_tokens", step.usage.outputTokens);
  }
  if (step.status === "failed") markError(span, step.error?.code, step.error?.message ?? "the step failed");
  span.end();
}

/**
 * The span of attempt `attempt` of the step of `parent`; `retry` when an earlier attempt of the
 * step failed or was cut off (by a crash: the re-run of an interrupted step is a retry).
 */
export function startAttemptSpan(
  parent: SpanScope | undefined,
  step: StepRecord,
  attempt: number,
  retryCause: string | undefined,
): SpanScope | undefined {
  if (!parent) return undefined;
  const { tracer } = parent;
  const span = tracer.startSpan(ATTEMPT_NAMES[attempt] ?? `attempt ${attempt}`, INTERNAL, parent.context);
  span.setAttribute(ATTR.runId, step.runId);
  span.setAttribute(ATTR.stepIndex, step.seq);
  span.setAttribute(ATTR.stepKind, step.kind);
  span.setAttribute(ATTR.attempt, attempt);
  span.setAttribute(ATTR.retry, retryCause !== undefined);
  if (retryCause !== undefined) span.setAttribute(ATTR.retryCause, retryCause);
  if (step.effect) span.setAttribute(ATTR.effectKey, step.effect.idempotencyKey);
  return { span, context: trace.setSpan(parent.context, span), tracer };
}

/**
 * The span of attempt `attempt`'s wait for a slot of rate limit `limit` (`waitMs` long), under the
 * step's span; end it with {@link endAttemptSpan} (with the error when the wait was cut off).
 */
export function startRateWaitSpan(
  parent: SpanScope | undefined,
  step: StepRecord,
  attempt: number,
  limit: string,
  waitMs: number,
): SpanScope | undefined {
  if (!parent) return undefined;
  const { tracer } = parent;
  const span = tracer.startSpan(`rate limit ${limit}`, INTERNAL, parent.context);
  span.setAttributes({
    [ATTR.runId]: step.runId,
    [ATTR.stepIndex]: step.seq,
    [ATTR.stepKind]: step.kind,
    [ATTR.attempt]: attempt,
    [ATTR.rateLimit]: limit,
    [ATTR.rateLimitWaitMs]: waitMs,
  });
  return { span, context: trace.setSpan(parent.context, span), tracer };
}

/** Ends an attempt's span: OK, or the error it threw (with its Cairn `code`). */
export function endAttemptSpan(scope: SpanScope | undefined, error?: unknown): void {
  if (!scope) return;
  if (error !== undefined) recordError(scope.span, error);
  scope.span.end();
}

/** Records `error` on `span`: an exception event, the ERROR status, and its Cairn code. */
export function recordError(span: Span, error: unknown): void {
  if (!span.isRecording()) return;
  const e = error instanceof Error ? error : new Error(String(error));
  span.recordException(e);
  markError(span, (error as { code?: unknown })?.code, e.message);
}

function markError(span: Span, code: unknown, message: string): void {
  if (typeof code === "string") {
    span.setAttribute(ATTR.errorCode, code);
    span.setAttribute("error.type", code);
  }
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/** Ends the spans of steps still blocked when an execution ended `how` (a pause: they wait on). */
export function endOpenSpans(open: Set<SpanScope>, how: string): void {
  for (const scope of open) {
    scope.span.setAttribute(ATTR.stepStatus, how === "paused" ? "waiting" : how);
    scope.span.end();
  }
  open.clear();
}

/** The span of wait step `seq` (its kind and name), under the execution's span. */
export function startWaitSpan(parent: SpanScope, runId: string, seq: number, kind: string, name: string): SpanScope {
  const { tracer } = parent;
  const span = tracer.startSpan(`wait ${name}`, INTERNAL, parent.context);
  span.setAttributes({
    [ATTR.runId]: runId,
    [ATTR.stepIndex]: seq,
    [ATTR.stepName]: name,
    [ATTR.stepKind]: "wait",
    "cairn.wait.kind": kind,
  });
  return { span, context: trace.setSpan(parent.context, span), tracer };
}

/** Ends a wait's span: resolved, or the error its resolution gave the workflow. */
export function endWaitSpan(scope: SpanScope, error?: unknown): void {
  scope.span.setAttribute(ATTR.stepStatus, error === undefined ? "completed" : "failed");
  if (error !== undefined) recordError(scope.span, error);
  scope.span.end();
}

/**
 * The span of a run's start (`start <agent>.<workflow>`, a producer) under the active context —
 * the caller's span, or the one the HTTP server took from `traceparent`. The run's executions
 * start under it: its context is stored with the run (`storedTraceContext`). A fork starts a trace
 * of its own the same way (`how`: "fork" or "rerun").
 */
export function startRunStartSpan(
  parent: Context,
  runId: string,
  agent: string,
  workflow: string,
  how = "start",
): SpanScope {
  const tracer = currentTracer();
  const span = tracer.startSpan(`${how} ${agent}.${workflow}`, { kind: SpanKind.PRODUCER }, parent);
  if (span.isRecording()) {
    span.setAttributes({ [ATTR.runId]: runId, [ATTR.agent]: agent, [ATTR.workflow]: workflow });
  }
  return { span, context: trace.setSpan(parent, span), tracer };
}
