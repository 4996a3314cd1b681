import { SpanStatusCode } from "@opentelemetry/api";
import type { RunRecord } from "../core/records.ts";
import { ATTR, type SpanScope, startRunSpan } from "../core/telemetry/spans.ts";
import { runSpanContext, runTraceContext } from "../core/telemetry/trace-context.ts";
import type { RunExecution } from "./run-execution.ts";

/**
 * The span of one execution of a run (DESIGN §7c): a child of the trace context stored with the
 * run when it started (`meta.trace`), so that every execution — after a pause, a crash, in another
 * process — joins the same trace; a child run's is also linked to the parent's span that spawned it.
 */
export function startExecutionSpan(execution: RunExecution): SpanScope {
  const run = execution.run;
  const parent = runTraceContext(run.meta);
  const spawnedBy = run.parentRunId !== null ? runSpanContext(run.meta) : undefined;
  return startRunSpan(
    run,
    execution.scope.workerId,
    parent,
    spawnedBy ? { context: spawnedBy, attributes: { [ATTR.parentRunId]: run.parentRunId ?? "" } } : undefined,
  );
}

/** Notes on the execution's span the state its run is in now (a pause, an ending). */
export function noteRunState(scope: SpanScope | undefined, run: RunRecord): void {
  if (!scope?.span.isRecording()) return;
  scope.span.setAttribute(ATTR.runState, run.state);
  if (run.pausedReason !== null) scope.span.setAttribute(ATTR.pausedReason, run.pausedReason);
}

/** Ends the execution's span with the state the run was left in (an error status when FAILED). */
export function endExecutionSpan(scope: SpanScope, run: RunRecord): void {
  const { span } = scope;
  if (span.isRecording()) {
    if (run.state !== "RUNNING") noteRunState(scope, run);
    if (run.state === "FAILED" || run.state === "BLOCKED") {
      if (run.error?.code) span.setAttribute(ATTR.errorCode, run.error.code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: run.error?.message ?? `the run ended ${run.state}` });
    }
  }
  span.end();
}
