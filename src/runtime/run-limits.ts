import { InvalidDefinitionError } from "../core/errors.ts";
import { DEFAULT_MAX_HISTORY_BYTES, DEFAULT_MAX_HISTORY_EVENTS } from "../core/history-meter.ts";

/**
 * Unread signals a run's inbox may hold. Every pause of the run reads its whole unread inbox (to
 * resolve what it waits for from it), and each signal may carry up to `maxPayloadBytes`: a run
 * that is not reading what it is sent should be told so, not buried. A run that takes a stream of
 * signals reads each as it comes (one wait each) and never nears it.
 */
export const DEFAULT_MAX_UNREAD_SIGNALS = 1000;

/** The per-run limits a runtime applies (DESIGN §4, "Limits"), as `cairn show` prints them. */
export interface RunLimits {
  /** Steps a run may take. */
  maxSteps: number;
  /** Bytes of JSON one payload may take. */
  maxPayloadBytes: number;
  /** Bytes of JSON a run's history may hold. */
  maxHistoryBytes: number;
  /** Events (steps, retried attempts, transitions) a run's history may hold. */
  maxHistoryEvents: number;
  /** Signals a run's inbox may hold unread. */
  maxUnreadSignals: number;
}

/** The history and inbox limits of `options`, defaults filled in; a limit that is not a whole number ≥ 1 is refused. */
export function historyLimits(options: {
  maxHistoryBytes?: number | undefined;
  maxHistoryEvents?: number | undefined;
  maxUnreadSignals?: number | undefined;
}): Pick<RunLimits, "maxHistoryBytes" | "maxHistoryEvents" | "maxUnreadSignals"> {
  return {
    maxHistoryBytes: whole("maxHistoryBytes", options.maxHistoryBytes, DEFAULT_MAX_HISTORY_BYTES),
    maxHistoryEvents: whole("maxHistoryEvents", options.maxHistoryEvents, DEFAULT_MAX_HISTORY_EVENTS),
    maxUnreadSignals: whole("maxUnreadSignals", options.maxUnreadSignals, DEFAULT_MAX_UNREAD_SIGNALS),
  };
}

function whole(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(Number.isSafeInteger(value) && value >= 1)) {
    throw new InvalidDefinitionError(`${name} must be a whole number, at least 1 (got ${String(value)})`);
  }
  return value;
}
