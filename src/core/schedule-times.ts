import { Cron } from "croner";
import { InvalidDefinitionError } from "./errors.ts";

/**
 * When a schedule fires (DESIGN §4 *Schedules*): a cron expression read in a time zone (croner),
 * or a fixed interval counted from the Unix epoch, so that every worker computes the same tick
 * times without talking to the others.
 */

/** A schedule's timing: a cron expression with its time zone, or an interval in milliseconds. */
export type ScheduleTiming =
  | { cron: string; timeZone: string; everyMs: null }
  | { cron: null; timeZone: null; everyMs: number };

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `every` as milliseconds: a number of ms, or `"<n><unit>"` with unit ms, s, m, h or d. */
export function parseEvery(every: number | string): number {
  const ms =
    typeof every === "number"
      ? every
      : (() => {
          const match = /^(\d+)(ms|s|m|h|d)$/.exec(every.trim());
          return match ? Number(match[1]) * (UNITS[match[2] as string] as number) : Number.NaN;
        })();
  if (!Number.isSafeInteger(ms) || ms < 1000) {
    throw new InvalidDefinitionError(
      `schedule interval ${JSON.stringify(every)} is not a whole number of milliseconds of at least 1000; give ms or "<n>s", "<n>m", "<n>h", "<n>d"`,
    );
  }
  return ms;
}

/** A croner job that is never started: only asked for times. Throws when the expression or zone is bad. */
function cronOf(timing: { cron: string; timeZone: string }): Cron {
  try {
    const job = new Cron(timing.cron, { timezone: timing.timeZone, paused: true });
    job.nextRun(new Date(0)); // checks the time zone, which croner reads lazily
    return job;
  } catch (error) {
    throw new InvalidDefinitionError(
      `schedule cron "${timing.cron}" in time zone "${timing.timeZone}" is not valid (${error instanceof Error ? error.message : String(error)}); give five or six cron fields and an IANA zone such as "Europe/Paris"`,
    );
  }
}

/** Checks a timing (throws `InvalidDefinitionError` naming what is wrong). */
export function checkTiming(timing: ScheduleTiming): void {
  if (timing.cron !== null) cronOf(timing);
}

/** The first tick strictly after `after` (epoch ms); undefined when the expression has no more. */
export function nextTick(timing: ScheduleTiming, after: number): number | undefined {
  if (timing.everyMs !== null) return (Math.floor(after / timing.everyMs) + 1) * timing.everyMs;
  return cronOf(timing).nextRun(new Date(after))?.getTime();
}

/** The next `count` ticks strictly after `after`. */
export function nextTicks(timing: ScheduleTiming, after: number, count: number): number[] {
  const ticks: number[] = [];
  let at = after;
  while (ticks.length < count) {
    const next = nextTick(timing, at);
    if (next === undefined) break;
    ticks.push(next);
    at = next;
  }
  return ticks;
}

/**
 * The last `count` ticks in `[from, now]`, oldest first (`from` is a tick). For an interval they
 * are counted; a cron expression is asked for the runs before `now`.
 */
export function lastTicks(timing: ScheduleTiming, from: number, now: number, count: number): number[] {
  if (now < from) return [];
  if (timing.everyMs !== null) {
    const last = Math.floor(now / timing.everyMs) * timing.everyMs;
    const first = Math.max(from, last - (count - 1) * timing.everyMs);
    const ticks: number[] = [];
    for (let t = first; t <= last; t += timing.everyMs) ticks.push(t);
    return ticks;
  }
  const before = cronOf(timing)
    .previousRuns(count, new Date(now + 1))
    .map((d) => d.getTime())
    .filter((t) => t >= from && t <= now)
    .sort((a, b) => a - b);
  return before.length > 0 ? before : [from];
}

/** The key of the run a tick starts: the same on every worker, so the tick starts one run. */
export function tickKey(scheduleId: string, tickAt: number): string {
  return `schedule:${scheduleId}@${new Date(tickAt).toISOString()}`;
}
