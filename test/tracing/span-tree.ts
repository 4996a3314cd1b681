import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";

/** Test helpers over exported spans: the tree of a trace, as indented lines of span names. */

/** The id of a span's parent (SDK 2.x: `parentSpanContext`). */
export function parentId(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

/**
 * `span`'s children among `spans`, in start order. The SDK stamps a span's start in milliseconds
 * (`Date.now()`), so two steps that start in the same millisecond are put in the order of their
 * step index (the workflow's order), then of their names (`attempt 1` before `attempt 2`).
 */
export function childrenOf(spans: readonly ReadableSpan[], span: ReadableSpan): ReadableSpan[] {
  return spans
    .filter((s) => parentId(s) === span.spanContext().spanId)
    .sort((a, b) => hr(a.startTime) - hr(b.startTime) || stepIndex(a) - stepIndex(b) || a.name.localeCompare(b.name));
}

/** The span's `cairn.step.index`, or 0 for a span of no step. */
function stepIndex(span: ReadableSpan): number {
  const index = span.attributes["cairn.step.index"];
  return typeof index === "number" ? index : 0;
}

/** The tree of `spans` as lines (`name [attr=value …]`), children indented under their parents. */
export function spanTree(spans: readonly ReadableSpan[], label: (s: ReadableSpan) => string = (s) => s.name): string[] {
  const ids = new Set(spans.map((s) => s.spanContext().spanId));
  const roots = spans
    .filter((s) => parentId(s) === undefined || !ids.has(parentId(s) ?? ""))
    .sort((a, b) => hr(a.startTime) - hr(b.startTime));
  const lines: string[] = [];
  const visit = (span: ReadableSpan, depth: number) => {
    lines.push(`${"  ".repeat(depth)}${label(span)}`);
    for (const child of childrenOf(spans, span)) visit(child, depth + 1);
  };
  for (const root of roots) visit(root, 0);
  return lines;
}

function hr(time: [number, number]): number {
  return time[0] * 1e9 + time[1];
}
