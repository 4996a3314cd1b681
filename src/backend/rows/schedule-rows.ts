import type { Json } from "../../core/records.ts";
import type { ScheduleCatchUp, ScheduleOverlap, ScheduleRecord } from "../../core/schedules.ts";

/** A `schedules` row as both SQL backends read it (SQLite's `paused` 0/1, PostgreSQL's boolean). */
export interface ScheduleRow {
  id: string;
  agent: string;
  workflow: string;
  input: string | Json;
  cron: string | null;
  time_zone: string | null;
  every_ms: number | string | null;
  overlap: string;
  catch_up: string;
  catch_up_limit: number;
  paused: number | boolean;
  next_at: number | string | null;
  last_tick_at: number | string | null;
  last_run_id: string | null;
  pending_at: number | string | null;
  buffered_at: number | string | null;
  version: number;
  created_at: number | string;
  updated_at: number | string;
}

/** The columns of `schedules`, in the order {@link scheduleValues} gives them. */
export const SCHEDULE_COLUMNS = [
  "id",
  "agent",
  "workflow",
  "input",
  "cron",
  "time_zone",
  "every_ms",
  "overlap",
  "catch_up",
  "catch_up_limit",
  "paused",
  "next_at",
  "last_tick_at",
  "last_run_id",
  "pending_at",
  "buffered_at",
  "version",
  "created_at",
  "updated_at",
] as const;

const num = (v: number | string | null): number | null => (v === null ? null : Number(v));

/** The record of a row; `input` is JSON text in SQLite and parsed JSON in PostgreSQL. */
export function scheduleFromRow(row: ScheduleRow, inputIsText: boolean): ScheduleRecord {
  return {
    id: row.id,
    agent: row.agent,
    workflow: row.workflow,
    input: inputIsText ? (JSON.parse(row.input as string) as Json) : (row.input as Json),
    cron: row.cron,
    timeZone: row.time_zone,
    everyMs: num(row.every_ms),
    overlap: row.overlap as ScheduleOverlap,
    catchUp: row.catch_up as ScheduleCatchUp,
    catchUpLimit: Number(row.catch_up_limit),
    paused: row.paused === true || row.paused === 1,
    nextAt: num(row.next_at),
    lastTickAt: num(row.last_tick_at),
    lastRunId: row.last_run_id,
    pendingAt: num(row.pending_at),
    bufferedAt: num(row.buffered_at),
    version: Number(row.version),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** The values of a record, in {@link SCHEDULE_COLUMNS} order; `paused` as SQLite's 0/1 or a boolean. */
export function scheduleValues(r: ScheduleRecord, pausedAsInteger: boolean): unknown[] {
  return [
    r.id,
    r.agent,
    r.workflow,
    JSON.stringify(r.input),
    r.cron,
    r.timeZone,
    r.everyMs,
    r.overlap,
    r.catchUp,
    r.catchUpLimit,
    pausedAsInteger ? (r.paused ? 1 : 0) : r.paused,
    r.nextAt,
    r.lastTickAt,
    r.lastRunId,
    r.pendingAt,
    r.bufferedAt,
    r.version,
    r.createdAt,
    r.updatedAt,
  ];
}
