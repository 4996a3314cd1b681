import { InvalidInputError } from "./errors.ts";
import type { RunState } from "./run-state.ts";
import { isTerminal } from "./run-state.ts";

/**
 * Retention (DESIGN §7, "Retention"): how long ended runs are kept, and the durations its options
 * are written in.
 */

/**
 * The states pruned unless told otherwise: every terminal state but INTERRUPTED, which a worker's
 * recovery or an operator's resume may take up again (name it in `states` to prune it too).
 */
export const DEFAULT_PRUNE_STATES: readonly RunState[] = [
  "COMPLETED",
  "FAILED",
  "BLOCKED",
  "CANCELLED",
  "COMPENSATED",
  "MOVED",
];

/** Runs a prune deletes per batch (one short transaction each), unless told otherwise. */
export const DEFAULT_PRUNE_BATCH_SIZE = 500;

/** The retention a runtime applies by itself (`RuntimeOptions.retention`). */
export interface RetentionPolicy {
  /** How long a run is kept after it ended: a duration such as `"30d"`, `"12h"`, or milliseconds. */
  olderThan: string | number;
  /** The ended states pruned. @default every terminal state but INTERRUPTED */
  states?: readonly RunState[];
  /** Only runs of this agent. @default every agent */
  agent?: string;
  /** How often the worker prunes: a duration or milliseconds. @default "1h" */
  every?: string | number;
  /** Runs per batch. @default 500 */
  batchSize?: number;
}

const UNITS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/**
 * Milliseconds of a duration: a whole number with a unit (`ms`, `s`, `m`, `h`, `d`, `w`; `"30d"`,
 * `"90m"`), or a number of milliseconds. Refused with `InvalidInputError` naming `what` and the
 * accepted forms; a duration of 0 or less too.
 */
export function parseDuration(value: string | number, what: string): number {
  const match = typeof value === "string" ? /^\s*(\d+)\s*(ms|s|m|h|d|w)\s*$/.exec(value) : null;
  const ms =
    typeof value === "number" ? value : match ? Number(match[1]) * (UNITS[match[2] as string] as number) : Number.NaN;
  if (!(Number.isSafeInteger(ms) && ms > 0)) {
    throw new InvalidInputError(
      `${what} must be a duration such as "30d", "12h", "90m" or "45s" (units ms, s, m, h, d, w), or milliseconds above 0 (got ${JSON.stringify(value)})`,
    );
  }
  return ms;
}

/** The states of a prune, checked: ended ones only; the default when none are named. */
export function pruneStates(states: readonly string[] | undefined): readonly RunState[] {
  if (states === undefined || states.length === 0) return DEFAULT_PRUNE_STATES;
  for (const state of states) {
    if (!isTerminal(state as RunState)) {
      throw new InvalidInputError(
        `cannot prune runs in state "${state}": only ended runs are pruned; name terminal states (${[...DEFAULT_PRUNE_STATES, "INTERRUPTED"].join(", ")})`,
      );
    }
  }
  return states as readonly RunState[];
}

/**
 * What retention applies to a run, as its contract says it (`checkpoint.retentionAndDeletion`):
 * the policy of the exporting runtime (`RuntimeOptions.retention`), or none, and whether the run
 * falls under it.
 */
export function retentionOf(run: { agent: string; state: RunState }, policy: RetentionPolicy | undefined): string {
  const manual =
    "`cairn prune --older-than <duration>` (or `runtime.prune`) deletes ended runs with their steps, effects, waits, signals and payloads";
  if (!policy) return `kept until pruned: this runtime prunes nothing by itself; ${manual}`;
  const states = policy.states && policy.states.length > 0 ? policy.states : DEFAULT_PRUNE_STATES;
  const rule = `the runtime's retention deletes runs${policy.agent === undefined ? "" : ` of agent ${policy.agent}`} ${String(policy.olderThan)} after they ended ${states.join(", ")}, with their steps, effects, waits, signals and payloads, checking every ${String(policy.every ?? "1h")}`;
  if (policy.agent !== undefined && policy.agent !== run.agent)
    return `kept until pruned: ${rule}; not this run's agent`;
  if (isTerminal(run.state) && !states.includes(run.state))
    return `kept until pruned: ${rule}; not a run that ended ${run.state}`;
  return isTerminal(run.state)
    ? `${rule}: this run goes ${String(policy.olderThan)} after its last transition (never while its parent or a child is open)`
    : `${rule}: kept while open, then as the rule says (never while its parent or a child is open)`;
}
