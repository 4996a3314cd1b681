import { context, metrics, ROOT_CONTEXT, trace } from "@opentelemetry/api";
import type { StepRecord } from "cairn";
import { attemptStarted, stepEnded } from "../src/core/telemetry/metrics.ts";
import { endAttemptSpan, endStepSpan, startAttemptSpan, startStepSpan } from "../src/core/telemetry/spans.ts";

/**
 * What telemetry costs a step by itself, beside the rows of bench/step-overhead.ts that measure
 * whole steps: the calls a step makes when no SDK is registered (the "no measurable cost
 * with no SDK"), and the floor of a traced step — what the SDK charges for two nested spans and
 * for running the attempt in its span's context, whoever calls it. Each is a loop of the exact
 * calls, so it is a best case (hot code, warm caches): the whole-step rows are the real figure.
 */

/** Iterations of each loop; they yield every `CHUNK`, as steps do, so an SDK's processor exports. */
const LOOPS = 100_000;
const CHUNK = 100;

/** A step's record as the telemetry calls read it (a completed tool step, its first attempt). */
function stepRecord(): StepRecord {
  const now = Date.now();
  return {
    runId: "run_bench",
    seq: 1,
    kind: "tool",
    name: "noop",
    status: "completed",
    argsDigest: "",
    args: null,
    result: null,
    error: undefined,
    attempts: [{ attempt: 1, startedAt: now, endedAt: now }],
    heartbeat: undefined,
    usage: undefined,
    startedAt: now,
    endedAt: now,
    epoch: 1,
  };
}

/** µs per iteration of `body`, after a warm-up of as many iterations. */
async function perIteration(body: (i: number) => void): Promise<number> {
  const loop = async () => {
    const t0 = performance.now();
    for (let i = 0; i < LOOPS; i += CHUNK) {
      for (let j = i; j < i + CHUNK; j++) body(j);
      await new Promise((resolve) => setImmediate(resolve));
    }
    return ((performance.now() - t0) * 1000) / LOOPS;
  };
  await loop();
  return loop();
}

/** What the telemetry calls of a step cost with no SDK registered (run it while none is). */
export async function noSdkCost(): Promise<{ apiUs: number; metricsUs: number }> {
  const step = stepRecord();
  let recording = 0;
  // runStep and executeStep's span calls (the run's scope is undefined: its span does not record),
  // and the two Meter lookups of the step's metrics.
  const apiUs = await perIteration((i) => {
    step.seq = i;
    const span = startStepSpan(undefined, step);
    const attempt = startAttemptSpan(span, step, 1, undefined);
    const meter = metrics.getMeterProvider();
    if (attempt || metrics.getMeterProvider() !== meter) recording++;
    endAttemptSpan(attempt);
    endStepSpan(span, step, false);
  });
  // The step's figures: the in-process registry `/metrics` serves, and the Meter lookups.
  const metricsUs = await perIteration(() => {
    attemptStarted(step.kind, false);
    stepEnded(step, false);
  });
  if (recording > 0) throw new Error("a span recorded with no SDK registered");
  return { apiUs, metricsUs };
}

/**
 * The SDK's own cost for a traced step (run it with the SDK registered): two nested spans started
 * and ended (the step's and its attempt's), and the context manager running the attempt's function
 * in the attempt's context. Cairn adds its attributes, names and bookkeeping to this.
 */
export async function sdkFloor(): Promise<{ spansUs: number; withUs: number }> {
  const tracer = trace.getTracer("cairn-floor");
  const root = tracer.startSpan("run floor");
  const runContext = trace.setSpan(ROOT_CONTEXT, root);
  let calls = 0;
  const fn = () => calls++;
  const spansUs = await perIteration(() => {
    const step = tracer.startSpan("tool noop", undefined, runContext);
    tracer.startSpan("attempt 1", undefined, trace.setSpan(runContext, step)).end();
    step.end();
  });
  const attemptContext = trace.setSpan(runContext, root);
  const withUs = await perIteration(() => context.with(attemptContext, fn));
  root.end();
  if (calls === 0) throw new Error("context.with ran nothing");
  return { spansUs, withUs };
}
