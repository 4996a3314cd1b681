import {
  type Context,
  context,
  createTraceState,
  isSpanContextValid,
  ROOT_CONTEXT,
  type SpanContext,
  TraceFlags,
  trace,
} from "@opentelemetry/api";
import type { Json } from "../records.ts";

/**
 * The W3C trace context (`traceparent`, `tracestate`) of a run, kept in its `meta.trace` so that
 * every execution of the run — in this process, or in another one after a crash — continues the
 * same trace. Written and read here without a propagator: a process without an OpenTelemetry SDK
 * (or without a propagator registered) still carries the caller's context along.
 */

/** The stored form: `meta.trace` of a run. */
export interface StoredTraceContext {
  traceparent: string;
  tracestate?: string;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$/;

/** The `traceparent` header of `spanContext`, or undefined for an invalid (no-op) one. */
export function formatTraceparent(spanContext: SpanContext): string | undefined {
  if (!isSpanContextValid(spanContext)) return undefined;
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, "0");
  return `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
}

/** The span context a `traceparent` header names (remote), or undefined when it is not one. */
export function parseTraceparent(traceparent: unknown, tracestate?: unknown): SpanContext | undefined {
  if (typeof traceparent !== "string") return undefined;
  const match = TRACEPARENT.exec(traceparent.trim().toLowerCase());
  if (!match) return undefined;
  const [, traceId = "", spanId = "", flags = "00"] = match;
  const spanContext: SpanContext = {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  if (!isSpanContextValid(spanContext)) return undefined;
  if (typeof tracestate === "string" && tracestate.length > 0) {
    spanContext.traceState = createTraceState(tracestate);
  }
  return spanContext;
}

/** `meta.trace` for the span of `ctx`, or undefined when it has no valid span (no SDK, no caller). */
export function storedTraceContext(ctx: Context): StoredTraceContext | undefined {
  const spanContext = trace.getSpanContext(ctx);
  if (!spanContext) return undefined;
  const traceparent = formatTraceparent(spanContext);
  if (!traceparent) return undefined;
  const tracestate = spanContext.traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

/** The context a run's `meta.trace` names, under which its executions' spans start; ROOT without one. */
export function runTraceContext(meta: Readonly<Record<string, Json>>): Context {
  const stored = meta.trace;
  if (stored === null || typeof stored !== "object" || Array.isArray(stored)) return ROOT_CONTEXT;
  const spanContext = parseTraceparent(stored.traceparent, stored.tracestate);
  return spanContext ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : ROOT_CONTEXT;
}

/** The span context a run's `meta.trace` names, for a link; undefined without one. */
export function runSpanContext(meta: Readonly<Record<string, Json>>): SpanContext | undefined {
  return trace.getSpanContext(runTraceContext(meta));
}

/** The active context (a caller's span, when an SDK with a context manager is registered). */
export function activeContext(): Context {
  return context.active();
}

/**
 * The `traceparent` (and `tracestate`) headers of the active span, for a request that carries
 * the caller's trace to a server; none without an active span.
 */
export function traceHeaders(): Record<string, string> {
  const stored = storedTraceContext(context.active());
  if (!stored) return {};
  return stored.tracestate ? { traceparent: stored.traceparent, tracestate: stored.tracestate } : { ...stored };
}

/**
 * The context a request's `traceparent` and `tracestate` headers name (remote parent), or the
 * active one when they name none.
 */
export function requestTraceContext(traceparent: string | undefined, tracestate: string | undefined): Context {
  const spanContext = parseTraceparent(traceparent, tracestate);
  return spanContext ? trace.setSpanContext(context.active(), spanContext) : context.active();
}

/**
 * The parent of a run's start span: the active span when there is one (an SDK's context manager
 * carries it), else the W3C context given (`StartOptions.traceparent`), else the active context.
 */
export function startParentContext(traceparent: string | undefined, tracestate: string | undefined): Context {
  const active = context.active();
  if (traceparent === undefined || isSpanContextValid(trace.getSpanContext(active) ?? INVALID)) return active;
  return requestTraceContext(traceparent, tracestate);
}

const INVALID: SpanContext = { traceId: "", spanId: "", traceFlags: 0 };
