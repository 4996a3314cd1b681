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

/** No schedule has this id. */
export class ScheduleNotFoundError extends CairnError {
  readonly code = "SCHEDULE_NOT_FOUND" as const;
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
    | "RUN_NEEDS_RECONCILIATION"
    | "RUN_MOVED";
  readonly runId: string;
  readonly state: string;
  /** The run's own error, as stored. */
  readonly error: SerializedError | undefined;
  constructor(
    details: {
      runId: string;
      state: "FAILED" | "BLOCKED" | "INTERRUPTED" | "CANCELLED" | "COMPENSATED" | "NEEDS_RECONCILIATION" | "MOVED";
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

/**
 * An exported run contract that is not what its exporter wrote (DESIGN §5, "Moving a run"): its
 * digest does not match its content. `field` names the first field that changed.
 */
export class ContractAlteredError extends CairnError {
  readonly code = "CONTRACT_ALTERED" as const;
  /** The contract field that changed, e.g. `run.state` or `journal.steps[3]`. */
  readonly field: string;
  constructor(message: string, details: { field: string }, options?: CairnErrorOptions) {
    super(message, options);
    this.field = details.field;
  }
}

/**
 * An import that the destination store cannot take: the run's id, or its key, names another run
 * there (not the same export), or the run's state or lineage cannot be continued there.
 */
export class ImportConflictError extends CairnError {
  readonly code = "IMPORT_CONFLICT" as const;
}

markErrorClasses({
  ContractAlteredError,
  ImportConflictError,
  LeaseLostError,
  RunNotFoundError,
  ScheduleNotFoundError,
  RunNotResumableError,
  RunNotOpenError,
  CancelledError,
  VersionMismatchError,
  RunNotCompletedError,
  AlreadyDecidedError,
  RunEndedError,
});
