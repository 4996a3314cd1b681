import { CairnError, type CairnErrorOptions, markErrorClasses } from "./cairn-error.ts";

/* Waits and approvals. */

/** A `waitFor` deadline passed before the run reached a terminal state. */
export class WaitTimeoutError extends CairnError {
  static override readonly retryable = true;
  readonly code = "WAIT_TIMEOUT" as const;
}

/** No wait (question, approval, timer …) with this id in the run. */
export class WaitNotFoundError extends CairnError {
  readonly code = "WAIT_NOT_FOUND" as const;
}

/** The wait was resolved or closed already: an answer or a decision comes once. */
export class WaitClosedError extends CairnError {
  readonly code = "WAIT_CLOSED" as const;
}

/** Thrown in the workflow when an approval it asked for was denied. Unhandled, the run ends BLOCKED. */
export class ApprovalDeniedError extends CairnError {
  readonly code = "APPROVAL_DENIED" as const;
  readonly approvalId: string;
  readonly by: string | undefined;
  constructor(message: string, details: { approvalId: string; by?: string | undefined }, options?: CairnErrorOptions) {
    super(message, options);
    this.approvalId = details.approvalId;
    this.by = details.by;
  }
}

/** Thrown in the workflow when an approval it asked for expired undecided. Unhandled, the run ends BLOCKED. */
export class ApprovalExpiredError extends CairnError {
  readonly code = "APPROVAL_EXPIRED" as const;
  readonly approvalId: string;
  constructor(message: string, details: { approvalId: string }, options?: CairnErrorOptions) {
    super(message, options);
    this.approvalId = details.approvalId;
  }
}

/**
 * An approve or deny was refused: `why` says which rule — the digest is not the one of the
 * payload (`wrong_digest`), the decider is not one of the approvers (`not_an_approver`), the
 * approval expired (`expired`), or no decider was named (`no_decider`).
 */
export class ApprovalRefusedError extends CairnError {
  readonly code = "APPROVAL_REFUSED" as const;
  readonly why: "wrong_digest" | "not_an_approver" | "expired" | "no_decider";
  constructor(message: string, why: ApprovalRefusedError["why"], options?: CairnErrorOptions) {
    super(message, options);
    this.why = why;
  }
}

markErrorClasses({
  WaitTimeoutError,
  WaitNotFoundError,
  WaitClosedError,
  ApprovalDeniedError,
  ApprovalExpiredError,
  ApprovalRefusedError,
});
