import { CairnError, type CairnErrorOptions, markErrorClasses } from "./cairn-error.ts";

/* The limits a run and its payloads are held to. */

/** The run reached its maximum number of steps; `ctx.continueAsNew` keeps long sessions small. */
export class StepLimitError extends CairnError {
  readonly code = "STEP_LIMIT" as const;
}

/**
 * The run's history reached one of its limits (`maxHistoryBytes`, `maxHistoryEvents`): the step
 * that would take it further is refused. Never retried: the history only grows; carry the state
 * over with `ctx.continueAsNew(state)` to go on in a fresh run.
 */
export class HistoryLimitError extends CairnError {
  readonly code = "HISTORY_LIMIT" as const;
  /** What is counted: `bytes` of JSON (`maxHistoryBytes`) or `events` (`maxHistoryEvents`). */
  readonly measure: "bytes" | "events";
  /** What the history holds, or would hold with the refused step. */
  readonly figure: number;
  readonly limit: number;
  constructor(
    message: string,
    details: { measure: "bytes" | "events"; figure: number; limit: number },
    options?: CairnErrorOptions,
  ) {
    super(message, options);
    this.measure = details.measure;
    this.figure = details.figure;
    this.limit = details.limit;
  }
}

/**
 * A signal was refused because the run's inbox holds `maxUnreadSignals` signals it has not read
 * (no wait of theirs came yet): nothing was stored. Not retryable as such: it succeeds only once
 * the run reads its inbox (a wait for one of those names) or the sender sends what a wait awaits.
 */
export class SignalInboxFullError extends CairnError {
  readonly code = "SIGNAL_INBOX_FULL" as const;
  /** Unread signals in the inbox. */
  readonly unread: number;
  readonly limit: number;
  constructor(message: string, details: { unread: number; limit: number }, options?: CairnErrorOptions) {
    super(message, options);
    this.unread = details.unread;
    this.limit = details.limit;
  }
}

/**
 * A payload (a step's arguments or result, a run's input or output, a signal, an answer …) is
 * larger than the journal takes (`maxPayloadBytes`). Never retried: it would be as large again.
 */
export class PayloadTooLargeError extends CairnError {
  readonly code = "PAYLOAD_TOO_LARGE" as const;
  /** Bytes of JSON text (UTF-8) the payload took. */
  readonly bytes: number;
  /** The limit it went over. */
  readonly limit: number;
  constructor(message: string, details: { bytes: number; limit: number }, options?: CairnErrorOptions) {
    super(message, options);
    this.bytes = details.bytes;
    this.limit = details.limit;
  }
}

markErrorClasses({ StepLimitError, HistoryLimitError, SignalInboxFullError, PayloadTooLargeError });
