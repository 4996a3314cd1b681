import { CairnError, type CairnErrorOptions, markErrorClasses } from "./cairn-error.ts";

/* How a step's attempts fail. */

/** A tool that failed for good: its retries were used up or its error was not retryable. */
export class ToolFailedError extends CairnError {
  readonly code = "TOOL_FAILED" as const;
  readonly tool: string;
  readonly attempts: number;
  constructor(message: string, details: { tool: string; attempts: number }, options?: CairnErrorOptions) {
    super(message, options);
    this.tool = details.tool;
    this.attempts = details.attempts;
  }
}

/** One attempt of a step ran past its start-to-close timeout. Retryable. */
export class StepTimeoutError extends CairnError {
  static override readonly retryable = true;
  readonly code = "STEP_TIMEOUT" as const;
}

/** A tool stopped heartbeating for longer than its heartbeat timeout. Retryable. */
export class HeartbeatTimeoutError extends CairnError {
  static override readonly retryable = true;
  readonly code = "HEARTBEAT_TIMEOUT" as const;
}

/**
 * Marks an error thrown by a tool as not worth retrying whatever the tool's policy says.
 * @example
 * throw new NonRetryableError("account is closed");
 */
export class NonRetryableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NonRetryableError";
  }
}

markErrorClasses({ ToolFailedError, StepTimeoutError, HeartbeatTimeoutError });
