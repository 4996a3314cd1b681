import { endWaitSpan, startWaitSpan } from "../../telemetry/spans.ts";
import type { EnvelopeState } from "../envelope-state.ts";
import type { BegunStep } from "../replay-cursor.ts";
import type { WaitSpec } from "../wait-steps.ts";

/**
 * A wait step (`ctx.waitForSignal`, `askUser`, `sleep`, `sleepUntil`, `requestApproval`, a
 * child's result, an approval before a call): begun now (its seq taken synchronously unless
 * `begun` is given), then resolved, replayed or paused on (see `WaitSteps.run`). A wait that is
 * not replayed has a span: ended when it resolves, or (`waiting`) when the execution pauses on it.
 */
export function waitCall<T>(x: EnvelopeState, make: () => WaitSpec<T>, begun?: BegunStep): Promise<T> {
  let started: BegunStep;
  let spec: WaitSpec<T>;
  try {
    spec = make();
    started = begun ?? x.begin("wait", spec.stepName);
  } catch (error) {
    return Promise.reject(error);
  }
  const waiting = x.waits.run(spec, started, x.writer, (seq, at) =>
    x.newStep(seq, "wait", spec.stepName, spec.args, at),
  );
  if (!x.trace || started.recorded?.status === "completed") return waiting;
  const span = startWaitSpan(x.trace, x.run.id, started.seq, spec.kind, spec.stepName);
  x.openSpans.add(span);
  const end = (error?: unknown) => {
    if (x.openSpans.delete(span)) endWaitSpan(span, error);
  };
  waiting.then(
    () => end(),
    (error: unknown) => end(error),
  );
  return waiting;
}
