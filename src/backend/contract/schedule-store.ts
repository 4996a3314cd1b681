import type { ScheduleRecord } from "../../core/schedules.ts";

/**
 * The schedules role of the storage contract (DESIGN §4 *Schedules*): schedule records, each
 * written by compare-and-set on its version, so that of the workers that plan the same tick only
 * one writes its plan. Checked by `conformance/schedules-conformance.ts`.
 */
export interface ScheduleStore {
  /**
   * Writes `record` when the stored version is `expectedVersion` (0: no schedule with this id
   * exists yet) and returns true; returns false and writes nothing otherwise.
   */
  writeSchedule(record: ScheduleRecord, expectedVersion: number): Promise<boolean>;
  getSchedule(id: string): Promise<ScheduleRecord | undefined>;
  /** By id. */
  listSchedules(): Promise<ScheduleRecord[]>;
  /** Deletes the schedule; false when there was none. Its runs stay. */
  deleteSchedule(id: string): Promise<boolean>;
  /**
   * Schedules with work at `now`, by id, at most `limit`: a pending tick (paused or not: a
   * trigger), or not paused with a tick due (`nextAt <= now`) or a buffered one.
   */
  dueSchedules(now: number, limit: number): Promise<ScheduleRecord[]>;
}
