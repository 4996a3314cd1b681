import { HistoryLimitError } from "./errors.ts";
import type { Json, RunRecord, StepRecord } from "./records.ts";
import { formatBytes } from "./serialize.ts";

/**
 * The per-run limits on what one run's history holds (DESIGN §4, "Limits"). A run's history is
 * what a replay reads back and an export lists:
 * - its bytes: the JSON text (UTF-8) of the run's input and of each step's arguments, result,
 *   error and attempts' errors (wait steps' results are the signals, answers and decisions they
 *   got). Wait rows (they repeat what their steps hold), the unread inbox (bounded by
 *   `maxUnreadSignals`) and the fixed fields of each record are not counted.
 * - its events: one per step, one per attempt after a step's first (a retry), one per transition.
 */

/**
 * Bytes of JSON a run's history may hold. A replay reads the whole history back into memory each
 * time the run resumes (after each pause, crash or deploy): 50 MiB reads in well under a second
 * from SQLite or PostgreSQL and leaves a worker room for many runs, and it holds three payloads
 * of the largest size (`maxPayloadBytes`, 16 MiB). Temporal chose 50 MB for the same reason.
 */
export const DEFAULT_MAX_HISTORY_BYTES = 50 * 1024 * 1024;

/**
 * Events a run's history may hold. A run that reaches `maxSteps` (10,000) with every step a wait
 * it paused on (three transitions each: PAUSED, RESUMING, RUNNING) holds about 40,000 events; 50,000
 * leaves it that room, so with the defaults a run that only takes steps meets `maxSteps` first and
 * this limit catches what steps do not count: retries and pause cycles. (Temporal's is 51,200.)
 */
export const DEFAULT_MAX_HISTORY_EVENTS = 50_000;

/** What a run's history holds. */
export interface HistorySize {
  /** Bytes of JSON text (UTF-8). */
  bytes: number;
  events: number;
}

/** The limits a {@link HistoryMeter} enforces. */
export interface HistoryLimits {
  maxHistoryBytes: number;
  maxHistoryEvents: number;
}

/** Bytes of the JSON text of `value` (UTF-8); 0 for undefined. */
export function jsonBytes(value: Json | object | undefined): number {
  if (value === undefined) return 0;
  return textBytes(JSON.stringify(value) ?? "");
}

/** Bytes of `text` in UTF-8. */
export function textBytes(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/** Bytes a stored step adds to its run's history: its arguments, result, error and attempts' errors. */
export function stepBytes(step: StepRecord): number {
  let bytes = jsonBytes(step.args) + jsonBytes(step.result) + jsonBytes(step.error);
  for (const attempt of step.attempts) bytes += jsonBytes(attempt.error);
  return bytes;
}

/** The size of a stored history: what an execution starts from, and what `cairn show` prints. */
export function historySize(
  run: Pick<RunRecord, "input" | "lastTransitionId">,
  steps: readonly StepRecord[],
): HistorySize {
  let bytes = jsonBytes(run.input);
  let events = run.lastTransitionId;
  for (const step of steps) {
    bytes += stepBytes(step);
    events += 1 + Math.max(0, step.attempts.length - 1);
  }
  return { bytes, events };
}

/**
 * The running size of one run's history during one execution: started from what was loaded
 * ({@link historySize}), grown by what the execution writes, so no step reads the journal again.
 * A new step is refused once a limit is reached, and a step's arguments or result that would take
 * the bytes past theirs fail that step; what must be recorded anyway (errors, a wait's resolution,
 * a retry) is counted and never refused. A warning is logged when either reaches 80 %.
 */
export class HistoryMeter {
  readonly #runId: string;
  readonly #limits: HistoryLimits;
  readonly #warn: (message: string) => void;
  #bytes: number;
  #events: number;
  #warned = false;
  /** Compensations run whatever the history holds: undoing effects is not optional. */
  #refusing = true;

  constructor(options: {
    runId: string;
    limits: HistoryLimits;
    loaded: HistorySize;
    warn: (message: string) => void;
  }) {
    this.#runId = options.runId;
    this.#limits = options.limits;
    this.#warn = options.warn;
    this.#bytes = options.loaded.bytes;
    this.#events = options.loaded.events;
    // Already past the warning when loaded: warned before (or the limits were lowered since).
    this.#warned = this.#over(0.8);
  }

  /** What the history holds now. */
  get size(): HistorySize {
    return { bytes: this.#bytes, events: this.#events };
  }

  /** From now on nothing is refused (the run is compensating). */
  stopRefusing(): void {
    this.#refusing = false;
  }

  /** A new step is about to be taken: refused at a limit, else counted as an event. */
  newStep(): void {
    const { maxHistoryBytes, maxHistoryEvents } = this.#limits;
    if (this.#refusing && this.#events >= maxHistoryEvents) {
      throw new HistoryLimitError(
        `run ${this.#runId}'s history holds ${this.#events} events (steps, retried attempts and transitions), its limit (maxHistoryEvents ${maxHistoryEvents}): no new step is taken. ${ADVICE("maxHistoryEvents")}`,
        { measure: "events", figure: this.#events + 1, limit: maxHistoryEvents },
      );
    }
    if (this.#refusing && this.#bytes >= maxHistoryBytes) {
      throw new HistoryLimitError(
        `run ${this.#runId}'s history holds ${formatBytes(this.#bytes)} of JSON, its limit is ${formatBytes(maxHistoryBytes)} (maxHistoryBytes): no new step is taken. ${ADVICE("maxHistoryBytes")}`,
        { measure: "bytes", figure: this.#bytes, limit: maxHistoryBytes },
      );
    }
    this.add(0, 1);
  }

  /**
   * Counts `bytes` of a payload about to be stored (`what` names it: "the result of tool …"), or
   * throws when they would take the history past `maxHistoryBytes` (nothing is counted then).
   */
  admit(bytes: number, what: string): void {
    const { maxHistoryBytes } = this.#limits;
    const total = this.#bytes + bytes;
    if (this.#refusing && total > maxHistoryBytes) {
      throw new HistoryLimitError(
        `${what} (${formatBytes(bytes)} of JSON) would take run ${this.#runId}'s history to ${formatBytes(total)}, over its limit of ${formatBytes(maxHistoryBytes)} (maxHistoryBytes). ${ADVICE("maxHistoryBytes")}`,
        { measure: "bytes", figure: total, limit: maxHistoryBytes },
      );
    }
    this.add(bytes, 0);
  }

  /** Counts what is stored whatever the limits: an error, a wait's resolution, a retry. */
  add(bytes: number, events: number): void {
    this.#bytes += bytes;
    this.#events += events;
    if (!this.#warned && this.#over(0.8)) {
      this.#warned = true;
      const { maxHistoryBytes, maxHistoryEvents } = this.#limits;
      this.#warn(
        `run ${this.#runId}'s history holds ${formatBytes(this.#bytes)} of JSON (limit ${formatBytes(maxHistoryBytes)}) and ${this.#events} events (limit ${maxHistoryEvents}): past 80 % of a limit; use ctx.continueAsNew(state) before it reaches it`,
      );
    }
  }

  #over(fraction: number): boolean {
    return (
      this.#bytes >= this.#limits.maxHistoryBytes * fraction || this.#events >= this.#limits.maxHistoryEvents * fraction
    );
  }
}

const ADVICE = (option: string) =>
  `Carry the state over with ctx.continueAsNew(state) to go on in a fresh run, keep large data elsewhere and pass a reference to it, or raise the runtime's ${option}.`;
