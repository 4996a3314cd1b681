import type Database from "better-sqlite3";
import type { ScheduleRecord } from "../../core/schedules.ts";
import type { ScheduleStore } from "../contract/schedule-store.ts";
import { SCHEDULE_COLUMNS, type ScheduleRow, scheduleFromRow, scheduleValues } from "../rows/schedule-rows.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";

const COLUMNS = SCHEDULE_COLUMNS.join(", ");
const MARKS = SCHEDULE_COLUMNS.map(() => "?").join(", ");
const SETS = SCHEDULE_COLUMNS.slice(1)
  .map((c) => `${c} = ?`)
  .join(", ");

/** The schedules of `SqliteBackend` (`ScheduleStore`): one row each, compared and set on `version`. */
export class SqliteSchedules implements ScheduleStore {
  readonly #c: SqliteConnection;
  readonly #insert: Database.Statement<unknown[]>;
  readonly #update: Database.Statement<unknown[]>;
  readonly #get: Database.Statement<[string], ScheduleRow>;
  readonly #list: Database.Statement<[], ScheduleRow>;
  readonly #delete: Database.Statement<[string]>;
  readonly #due: Database.Statement<[number, number], ScheduleRow>;

  constructor(connection: SqliteConnection) {
    this.#c = connection;
    const db = connection.db;
    this.#insert = db.prepare(`INSERT INTO schedules (${COLUMNS}) VALUES (${MARKS}) ON CONFLICT (id) DO NOTHING`);
    this.#update = db.prepare(`UPDATE schedules SET ${SETS} WHERE id = ? AND version = ?`);
    this.#get = db.prepare(`SELECT ${COLUMNS} FROM schedules WHERE id = ?`);
    this.#list = db.prepare(`SELECT ${COLUMNS} FROM schedules ORDER BY id`);
    this.#delete = db.prepare("DELETE FROM schedules WHERE id = ?");
    this.#due = db.prepare(
      `SELECT ${COLUMNS} FROM schedules WHERE pending_at IS NOT NULL
         OR (paused = 0 AND (next_at <= ? OR buffered_at IS NOT NULL)) ORDER BY id LIMIT ?`,
    );
  }

  async writeSchedule(record: ScheduleRecord, expectedVersion: number): Promise<boolean> {
    const values = scheduleValues(record, true);
    return this.#c.write(true, "writeSchedule", () =>
      expectedVersion === 0
        ? this.#insert.run(...values).changes === 1
        : this.#update.run(...values.slice(1), record.id, expectedVersion).changes === 1,
    );
  }

  async getSchedule(id: string): Promise<ScheduleRecord | undefined> {
    const row = this.#c.read("getSchedule", () => this.#get.get(id));
    return row && scheduleFromRow(row, true);
  }

  async listSchedules(): Promise<ScheduleRecord[]> {
    return this.#c.read("listSchedules", () => this.#list.all()).map((row) => scheduleFromRow(row, true));
  }

  async deleteSchedule(id: string): Promise<boolean> {
    return this.#c.write(true, "deleteSchedule", () => this.#delete.run(id).changes === 1);
  }

  async dueSchedules(now: number, limit: number): Promise<ScheduleRecord[]> {
    return this.#c.read("dueSchedules", () => this.#due.all(now, limit)).map((row) => scheduleFromRow(row, true));
  }
}
