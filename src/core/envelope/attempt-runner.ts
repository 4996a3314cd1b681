import { HeartbeatTimeoutError, StepTimeoutError } from "../errors.ts";

/** Limits of one attempt. */
export interface AttemptLimits {
  startToCloseTimeoutMs: number | undefined;
  heartbeatTimeoutMs: number | undefined;
  /** Label for messages, e.g. `tool "fetch_data" (step 3, attempt 2)`. */
  label: string;
}

/**
 * Runs one attempt of a step under its timeouts. The attempt's signal fires when the
 * start-to-close timeout passes, when no heartbeat came within the heartbeat timeout, or when
 * `parent` fires (the run was stopped); the attempt then rejects with that reason even if the
 * function ignores its signal.
 */
export async function runAttempt<T>(
  parent: AbortSignal,
  limits: AttemptLimits,
  fn: (signal: AbortSignal, beat: () => void) => Promise<T> | T,
): Promise<T> {
  if (limits.startToCloseTimeoutMs === undefined && limits.heartbeatTimeoutMs === undefined) {
    // No timer can abort this attempt, so it sees the run's own signal: no controller, no race.
    // If the run stops meanwhile the envelope stops waiting for it, and its result is not saved.
    if (parent.aborted) throw parent.reason;
    return fn(parent, noop);
  }
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent.reason);
  if (parent.aborted) throw parent.reason;
  parent.addEventListener("abort", onParentAbort, { once: true });
  let deadline: ReturnType<typeof setTimeout> | undefined;
  let heartbeatTimer: ReturnType<typeof setTimeout> | undefined;
  const armHeartbeat = () => {
    if (limits.heartbeatTimeoutMs === undefined) return;
    if (heartbeatTimer) clearTimeout(heartbeatTimer);
    heartbeatTimer = setTimeout(
      () =>
        controller.abort(
          new HeartbeatTimeoutError(`${limits.label} sent no heartbeat for ${limits.heartbeatTimeoutMs} ms`),
        ),
      limits.heartbeatTimeoutMs,
    );
  };
  if (limits.startToCloseTimeoutMs !== undefined) {
    deadline = setTimeout(
      () =>
        controller.abort(
          new StepTimeoutError(`${limits.label} timed out after ${limits.startToCloseTimeoutMs} ms (start-to-close)`),
        ),
      limits.startToCloseTimeoutMs,
    );
  }
  armHeartbeat();
  try {
    const work = (async () => fn(controller.signal, armHeartbeat))();
    const aborted = new Promise<never>((_, reject) => {
      if (controller.signal.aborted) reject(controller.signal.reason);
      controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true });
    });
    // The work may go on after an abort; its late result or error is ignored, not unhandled.
    work.catch(() => {});
    aborted.catch(() => {});
    return await Promise.race([work, aborted]);
  } finally {
    if (deadline) clearTimeout(deadline);
    if (heartbeatTimer) clearTimeout(heartbeatTimer);
    parent.removeEventListener("abort", onParentAbort);
  }
}

function noop(): void {}
