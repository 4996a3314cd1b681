import type { SerializedError } from "./errors.ts";
import type { StopRequest } from "./records.ts";

/**
 * A cancel that waits for an operator (DESIGN §5): asked while an effect's outcome was unknown,
 * it is carried out once every such effect is reconciled. Until then it is kept on the run's
 * error (`data.cancel`) beside the run's stop request: who asked, why, and the steps that were in
 * flight, so the evidence of the cancel stays whole across NEEDS_RECONCILIATION and RECONCILING.
 */
export interface PendingCancel {
  by: string;
  reason: string | null;
  /** Seqs of the steps in flight when the cancel began; absent when it was asked of a run already waiting. */
  inFlight?: number[];
}

/** The pending cancel recorded on a run's error, if any. */
export function pendingCancel(error: SerializedError | undefined): PendingCancel | undefined {
  const cancel = error?.data?.cancel as Partial<PendingCancel> | undefined;
  if (!cancel || typeof cancel !== "object" || typeof cancel.by !== "string") return undefined;
  const inFlight = Array.isArray(cancel.inFlight) ? cancel.inFlight.filter((n) => typeof n === "number") : undefined;
  return {
    by: cancel.by,
    reason: typeof cancel.reason === "string" ? cancel.reason : null,
    ...(inFlight ? { inFlight } : {}),
  };
}

/**
 * The error of a NEEDS_RECONCILIATION run that `request` (a cancel) was just asked of: its
 * message says the cancel waits for the reconciliation, and `data.cancel` records it. A run with
 * a pending cancel already keeps the first one's record.
 */
export function withPendingCancel(
  error: SerializedError | undefined,
  request: StopRequest,
): SerializedError | undefined {
  if (!error || pendingCancel(error)) return error;
  const cancel: PendingCancel = { by: request.by.id, reason: request.reason };
  return {
    ...error,
    message: `${error.message}. A cancel is pending (asked by ${request.by.kind} ${request.by.id}: ${request.reason}): once its effects are reconciled the run ends CANCELLED instead of going on`,
    data: { ...error.data, cancel },
  };
}
