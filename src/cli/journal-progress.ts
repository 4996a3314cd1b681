import type { RunEventBody } from "../core/events.ts";
import type { StepKind, StepRecord } from "../core/records.ts";

/** Kinds of steps whose attempts are printed: calls, not values, markers or waits (transitions say those). */
const SHOWN: ReadonlySet<StepKind> = new Set<StepKind>(["tool", "llm", "domain", "child", "sandbox"]);

/**
 * The step events of a run executed by another process, read from its journal (`cairn show
 * --follow`): the live events of that process are not here, but its step records are. Each read
 * of the steps gives the attempts that started or ended since the last one, as `step.start` and
 * `step.end` events with the attempt's start time. Retry waits and model text are not in the
 * journal: the failed attempt and the next one's start say the retry.
 */
export class JournalProgress {
  /** Per step: attempts whose start, and whose end, were given. */
  readonly #seen = new Map<number, { started: number; ended: number }>();

  /** `shown`: the steps already printed (the table of `cairn show`): their attempts so far are not repeated. */
  constructor(shown: readonly StepRecord[] = []) {
    for (const step of shown) {
      this.#seen.set(step.seq, {
        started: step.attempts.length,
        ended: step.attempts.filter((a) => a.endedAt !== null).length,
      });
    }
  }

  /** The events of what changed in `steps` since the last call, each with its attempt's start. */
  read(steps: readonly StepRecord[]): { event: RunEventBody; startedAt: number }[] {
    const out: { event: RunEventBody; startedAt: number }[] = [];
    for (const step of [...steps].sort((a, b) => a.seq - b.seq)) {
      if (!SHOWN.has(step.kind)) continue;
      const seen = this.#seen.get(step.seq) ?? { started: 0, ended: 0 };
      const { seq, kind, name } = step;
      step.attempts.forEach((a, i) => {
        if (i >= seen.started) {
          out.push({ event: { type: "step.start", seq, attempt: a.attempt, kind, name }, startedAt: a.startedAt });
          seen.started = i + 1;
        }
        if (a.endedAt !== null && i >= seen.ended) {
          const durationMs = Math.max(0, a.endedAt - a.startedAt);
          const status = a.error ? "failed" : "completed";
          const error = a.error?.message;
          const event: RunEventBody = { type: "step.end", seq, attempt: a.attempt, kind, name, status, durationMs };
          out.push({ event: error === undefined ? event : { ...event, error }, startedAt: a.startedAt });
          seen.ended = i + 1;
        }
      });
      this.#seen.set(seq, seen);
    }
    return out;
  }
}
