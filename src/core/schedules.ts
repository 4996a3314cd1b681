import { InvalidDefinitionError } from "./errors.ts";
import type { Json } from "./records.ts";
import { checkTiming, parseEvery, type ScheduleTiming } from "./schedule-times.ts";

/**
 * Schedules (DESIGN §4 *Schedules*): what a user declares (`defineSchedule`), what the backend
 * stores (`ScheduleRecord`) and the checks between them. When a tick fires and what it does is
 * in `schedule-plan.ts`; the times in `schedule-times.ts`.
 */

/**
 * What a tick does while the run of the previous tick has not ended: `skip` the tick, buffer it
 * (`bufferOne`: started when the previous run ends; ticks beyond one are skipped), `allow` runs
 * side by side, or `cancelPrevious` (cancel the previous run, start this one).
 */
export type ScheduleOverlap = "skip" | "bufferOne" | "allow" | "cancelPrevious";

/**
 * What happens to the ticks missed while no worker was alive (or the schedule's agent had no
 * worker): `none` drops them (a tick late by less than a minute, and less than the time to the
 * next tick, still fires), `latest` fires the last one missed, `all` fires each of them, oldest
 * first, at most `catchUpLimit`.
 */
export type ScheduleCatchUp = "none" | "latest" | "all";

/** A schedule as declared: `defineSchedule(...)`, `runtime.schedule(...)`. */
export interface ScheduleOptions {
  /** Unique name of the schedule in the backend (letters, digits, `._:-`). */
  id: string;
  /** The agent whose workflow each tick starts (its name, or the definition). */
  agent: string | { readonly name: string };
  workflow: string;
  /** The input of every run it starts (JSON). @default null */
  input?: Json;
  /** A cron expression (five fields, or six with seconds), read in `timeZone`. */
  cron?: string;
  /** IANA time zone of `cron`. @default "UTC" */
  timeZone?: string;
  /** An interval instead of `cron`: ms, or `"30s"`, `"5m"`, `"1h"`, `"1d"` (at least 1 s); ticks at multiples of it since the epoch. */
  every?: number | string;
  /** @default "skip" */
  overlap?: ScheduleOverlap;
  /** @default "latest" */
  catchUp?: ScheduleCatchUp;
  /** At most this many missed ticks fire under `catchUp: "all"`. @default 100 */
  catchUpLimit?: number;
  /** Created paused (applies when the schedule is created, not when an existing one is defined again). @default false */
  paused?: boolean;
}

/** A checked schedule definition, as `defineSchedule` returns it. */
export interface ScheduleDefinition {
  readonly id: string;
  readonly agent: string;
  readonly workflow: string;
  readonly input: Json;
  readonly timing: ScheduleTiming;
  readonly overlap: ScheduleOverlap;
  readonly catchUp: ScheduleCatchUp;
  readonly catchUpLimit: number;
  readonly paused: boolean;
}

/** A schedule as the backend stores it: the definition and where its ticks stand. */
export interface ScheduleRecord {
  id: string;
  agent: string;
  workflow: string;
  input: Json;
  cron: string | null;
  timeZone: string | null;
  everyMs: number | null;
  overlap: ScheduleOverlap;
  catchUp: ScheduleCatchUp;
  catchUpLimit: number;
  paused: boolean;
  /** The next tick to fire (epoch ms); null when a cron expression has no more. */
  nextAt: number | null;
  /** The last tick handled (fired, buffered or skipped). */
  lastTickAt: number | null;
  /** The run of the last tick that started one: the overlap policy looks at it. */
  lastRunId: string | null;
  /** A tick decided to start whose run may not be created yet: any worker creates it (its key makes that idempotent). */
  pendingAt: number | null;
  /** A tick held by `bufferOne` until the previous run ends. */
  bufferedAt: number | null;
  /** Bumped by every write; writes compare and set it. */
  version: number;
  createdAt: number;
  updatedAt: number;
}

const OVERLAPS: readonly ScheduleOverlap[] = ["skip", "bufferOne", "allow", "cancelPrevious"];
const CATCH_UPS: readonly ScheduleCatchUp[] = ["none", "latest", "all"];

function fail(id: string, problem: string): never {
  throw new InvalidDefinitionError(`schedule "${id}": ${problem}`);
}

/** The timing of a declaration: exactly one of `cron` and `every`. */
function timingOf(options: ScheduleOptions): ScheduleTiming {
  if ((options.cron === undefined) === (options.every === undefined)) {
    fail(options.id, "give exactly one of `cron` (with `timeZone`) and `every`");
  }
  if (options.every !== undefined) {
    if (options.timeZone !== undefined) fail(options.id, "`timeZone` applies to `cron` only");
    return { cron: null, timeZone: null, everyMs: parseEvery(options.every) };
  }
  const timing = { cron: String(options.cron), timeZone: options.timeZone ?? "UTC", everyMs: null };
  checkTiming(timing);
  return timing;
}

/**
 * Checks a schedule declaration and returns its definition; throws `InvalidDefinitionError`
 * naming what is wrong. Register it with `runtime.schedule(definition)` or the runtime's
 * `schedules` option.
 *
 * @example
 * const nightly = defineSchedule({
 *   id: "nightly-report", agent: "reports", workflow: "build", input: { scope: "all" },
 *   cron: "0 2 * * *", timeZone: "Europe/Paris", overlap: "skip", catchUp: "latest",
 * });
 */
export function defineSchedule(options: ScheduleOptions): ScheduleDefinition {
  const id = String(options.id ?? "");
  if (!/^[A-Za-z0-9._:-]{1,200}$/.test(id)) {
    fail(id, "the id must be 1 to 200 letters, digits, `.`, `_`, `:` or `-`");
  }
  const agent = typeof options.agent === "string" ? options.agent : options.agent?.name;
  if (!agent) fail(id, "name the agent (`agent`)");
  if (!options.workflow) fail(id, "name the workflow (`workflow`)");
  const overlap = options.overlap ?? "skip";
  if (!OVERLAPS.includes(overlap)) fail(id, `overlap must be one of ${OVERLAPS.join(", ")}`);
  const catchUp = options.catchUp ?? "latest";
  if (!CATCH_UPS.includes(catchUp)) fail(id, `catchUp must be one of ${CATCH_UPS.join(", ")}`);
  const catchUpLimit = options.catchUpLimit ?? 100;
  if (!Number.isSafeInteger(catchUpLimit) || catchUpLimit < 1 || catchUpLimit > 10_000) {
    fail(id, "catchUpLimit must be a whole number from 1 to 10000");
  }
  return {
    id,
    agent,
    workflow: options.workflow,
    input: options.input ?? null,
    timing: timingOf({ ...options, id }),
    overlap,
    catchUp,
    catchUpLimit,
    paused: options.paused === true,
  };
}

/** The timing a record holds. */
export function timingOfRecord(record: ScheduleRecord): ScheduleTiming {
  return record.everyMs !== null
    ? { cron: null, timeZone: null, everyMs: record.everyMs }
    : { cron: record.cron as string, timeZone: record.timeZone ?? "UTC", everyMs: null };
}
