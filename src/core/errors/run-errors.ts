import { CairnError, type CairnErrorOptions, markErrorClasses, type SerializedError } from "./cairn-error.ts";

/* Errors about a run as a whole: its lease, its state, how it ended. */

/**
 * A write carried a lease epoch older than the run's: another worker took the run over. The
 * worker that gets it drops the run; nothing it does afterwards is stored.
 */
export class LeaseLostError extends CairnError {
  readonly code = "LEASE_LOST" as const;
}

/** No run has this id. */
export class RunNotFoundError extends CairnError {
  readonly code = "RUN_NOT_FOUND" as const;
}

/** `resume` was asked of a run that cannot be resumed from its state. */
export class RunNotResumableError extends CairnError {
  readonly code = "RUN_NOT_RESUMABLE" as const;
}

/** The run is in a terminal state and takes no more signals, answers or decisions. */
export class RunNotOpenError extends CairnError {
  readonly code = "RUN_NOT_OPEN" as const;
}

/** The run was cancelled: what a tool's `AbortSignal` carries, and the error of a CANCELLED run. */
export class CancelledError extends CairnError {
  readonly code = "CANCELLED" as const;
}

/**
 * The run was started on a workflow version that the deployed code does not accept. The run is
 * FAILED and can be resumed once code that accepts the version is deployed.
 */
export class VersionMismatchError extends CairnError {
  readonly code = "VERSION_MISMATCH" as const;
}

/** `accept` / `reject` need a COMPLETED run. */
export class RunNotCompletedError extends CairnError {
  readonly code = "RUN_NOT_COMPLETED" as const;
}

/** The run already has an acceptance verdict; it is given once. */
export class AlreadyDecidedError extends CairnError {
  readonly code = "ALREADY_DECIDED" as const;
}

/** Thrown by `RunHandle.result()` when the run did not complete; `code` tells which ending. */
export class RunEndedError extends CairnError {
  readonly code:
    | "RUN_FAILED"
    | "RUN_BLOCKED"
    | "RUN_INTERRUPTED"
    | "RUN_CANCELLED"
    | "RUN_COMPENSATED"
    | "RUN_NEEDS_RECONCILIATION";
  readonly runId: string;
  readonly state: string;
  /** The run's own error, as stored. */
  readonly error: SerializedError | undefined;
  constructor(
    details: {
      runId: string;
      state: "FAILED" | "BLOCKED" | "INTERRUPTED" | "CANCELLED" | "COMPENSATED" | "NEEDS_RECONCILIATION";
      error?: SerializedError | undefined;
    },
    options?: CairnErrorOptions,
  ) {
    const why = details.error
      ? `: ${details.error.code ? `[${details.error.code}] ` : ""}${details.error.message}`
      : "";
    super(`run ${details.runId} ended ${details.state}${why}`, options);
    this.code = `RUN_${details.state}` as RunEndedError["code"];
    this.runId = details.runId;
    this.state = details.state;
    this.error = details.error;
  }
}

markErrorClasses({
  LeaseLostError,
  RunNotFoundError,
  RunNotResumableError,
  RunNotOpenError,
  CancelledError,
  VersionMismatchError,
  RunNotCompletedError,
  AlreadyDecidedError,
  RunEndedError,
});
