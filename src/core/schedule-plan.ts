import { lastTicks, nextTick } from "./schedule-times.ts";
import { type ScheduleDefinition, type ScheduleRecord, timingOfRecord } from "./schedules.ts";

/**
 * What a schedule does next, decided from its record, the time and the state of the run of its
 * last tick. Pure: a worker computes the plan, then writes it with a compare-and-set on the
 * record's version, so of two workers planning the same tick one writes and the other drops it.
 */

/** Where the run of a schedule's last tick stands, for the overlap policy. */
export type PreviousRun = "none" | "active" | "ended";

/** A late tick still fires under `catchUp: "none"` when late by less than this (and less than the period). */
export const ON_TIME_GRACE_MS = 60_000;

/** The record of a newly defined schedule, or an existing one with its definition replaced. */
export function definedRecord(
  definition: ScheduleDefinition,
  existing: ScheduleRecord | undefined,
  now: number,
): ScheduleRecord {
  const { timing } = definition;
  const sameTiming =
    existing !== undefined &&
    existing.cron === timing.cron &&
    existing.timeZone === timing.timeZone &&
    existing.everyMs === timing.everyMs;
  const base = {
    id: definition.id,
    agent: definition.agent,
    workflow: definition.workflow,
    input: definition.input,
    cron: timing.cron,
    timeZone: timing.timeZone,
    everyMs: timing.everyMs,
    overlap: definition.overlap,
    catchUp: definition.catchUp,
    catchUpLimit: definition.catchUpLimit,
    updatedAt: now,
  };
  if (existing) {
    return {
      ...existing,
      ...base,
      nextAt: sameTiming ? existing.nextAt : (nextTick(timing, now) ?? null),
      version: existing.version + 1,
    };
  }
  return {
    ...base,
    paused: definition.paused,
    nextAt: nextTick(timing, now) ?? null,
    lastTickAt: null,
    lastRunId: null,
    pendingAt: null,
    bufferedAt: null,
    version: 1,
    createdAt: now,
  };
}

/** The record paused, or resumed (its next tick the first after now: ticks missed while paused never fire). */
export function pausedRecord(record: ScheduleRecord, paused: boolean, now: number): ScheduleRecord {
  const nextAt = paused ? record.nextAt : (nextTick(timingOfRecord(record), now) ?? null);
  return {
    ...record,
    paused,
    nextAt,
    bufferedAt: paused ? record.bufferedAt : null,
    version: record.version + 1,
    updatedAt: now,
  };
}

/** A plan: the record to write, and the tick whose run it starts (as `pendingAt`), if any. */
export interface TickPlan {
  next: ScheduleRecord;
  start: number | null;
  /** What was decided, for the log. */
  note: string;
}

/** The tick to handle of a due schedule, and whether catch-up drops it. */
function dueTick(record: ScheduleRecord, now: number): { tick: number; dropped: boolean } {
  const timing = timingOfRecord(record);
  const from = record.nextAt as number;
  if (record.catchUp === "all") {
    const ticks = lastTicks(timing, from, now, record.catchUpLimit);
    return { tick: ticks[0] ?? from, dropped: false };
  }
  const latest = lastTicks(timing, from, now, 1)[0] ?? from;
  if (record.catchUp === "latest") return { tick: latest, dropped: false };
  const following = nextTick(timing, latest) ?? Number.POSITIVE_INFINITY;
  const late = now - latest;
  return { tick: latest, dropped: late > Math.min(ON_TIME_GRACE_MS, following - latest) };
}

/**
 * What a schedule does at `now`: start a buffered tick whose previous run ended, or handle its due
 * tick (catch-up policy, then overlap policy). Undefined when there is nothing to do (paused, a
 * pending tick to complete first, or no tick due).
 */
export function planTick(record: ScheduleRecord, now: number, previous: PreviousRun): TickPlan | undefined {
  if (record.paused || record.pendingAt !== null) return undefined;
  const written = { version: record.version + 1, updatedAt: now };
  if (record.bufferedAt !== null && previous !== "active") {
    const at = record.bufferedAt;
    return {
      next: { ...record, ...written, bufferedAt: null, pendingAt: at },
      start: at,
      note: "buffered tick started",
    };
  }
  if (record.nextAt === null || record.nextAt > now) return undefined;
  const { tick, dropped } = dueTick(record, now);
  const nextAt = nextTick(timingOfRecord(record), tick) ?? null;
  const moved = { ...record, ...written, nextAt, lastTickAt: tick };
  if (dropped) return { next: moved, start: null, note: "missed tick dropped (catchUp none)" };
  if (previous === "active") {
    if (record.overlap === "skip") return { next: moved, start: null, note: "skipped: previous run still going" };
    if (record.overlap === "bufferOne") {
      return { next: { ...moved, bufferedAt: record.bufferedAt ?? tick }, start: null, note: "buffered" };
    }
  }
  return { next: { ...moved, pendingAt: tick }, start: tick, note: "started" };
}

/** The record once the run of its pending tick exists. */
export function completedRecord(record: ScheduleRecord, runId: string, now: number): ScheduleRecord {
  return { ...record, pendingAt: null, lastRunId: runId, version: record.version + 1, updatedAt: now };
}
