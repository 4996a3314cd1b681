import type { ScheduleRecord } from "../../core/schedules.ts";
import type { ScheduleStore } from "../contract/schedule-store.ts";
import { SCHEDULE_COLUMNS, type ScheduleRow, scheduleFromRow, scheduleValues } from "../rows/schedule-rows.ts";
import type { PostgresShared } from "./postgres-plans.ts";
import { quoteIdent, type Sql, sql } from "./postgres-sql.ts";

/** The statements of the schedules role, for one schema. */
function scheduleStatements(schema: string): Record<"insert" | "update" | "get" | "list" | "remove" | "due", Sql> {
  const t = `${quoteIdent(schema)}.schedules`;
  const columns = SCHEDULE_COLUMNS.join(", ");
  const marks = SCHEDULE_COLUMNS.map((_, i) => `$${i + 1}`).join(", ");
  const sets = SCHEDULE_COLUMNS.slice(1)
    .map((c, i) => `${c} = $${i + 2}`)
    .join(", ");
  const n = SCHEDULE_COLUMNS.length;
  return {
    insert: sql(`INSERT INTO ${t} (${columns}) VALUES (${marks}) ON CONFLICT (id) DO NOTHING RETURNING id`),
    update: sql(`UPDATE ${t} SET ${sets} WHERE id = $1 AND version = $${n + 1} RETURNING id`),
    get: sql(`SELECT ${columns} FROM ${t} WHERE id = $1`),
    list: sql(`SELECT ${columns} FROM ${t} ORDER BY id`),
    remove: sql(`DELETE FROM ${t} WHERE id = $1 RETURNING id`),
    due: sql(
      `SELECT ${columns} FROM ${t} WHERE pending_at IS NOT NULL
         OR (NOT paused AND (next_at <= $1 OR buffered_at IS NOT NULL)) ORDER BY id LIMIT $2`,
    ),
  };
}

/**
 * The schedules of `PostgresBackend` (`ScheduleStore`): one row each; a write is one statement
 * whose `WHERE version = $n` makes it a compare-and-set (of two workers writing the same
 * version, the second updates no row).
 */
export class PostgresSchedules implements ScheduleStore {
  readonly #x: PostgresShared;
  readonly #s: ReturnType<typeof scheduleStatements>;

  constructor(shared: PostgresShared) {
    this.#x = shared;
    this.#s = scheduleStatements(shared.schema);
  }

  async #query(operation: string, statement: Sql, values: unknown[]): Promise<ScheduleRow[]> {
    const { db } = this.#x;
    const pool = db.ready();
    return db.call(operation, () => db.query<ScheduleRow>(pool, statement, values));
  }

  async writeSchedule(record: ScheduleRecord, expectedVersion: number): Promise<boolean> {
    const values = scheduleValues(record, false);
    const rows =
      expectedVersion === 0
        ? await this.#query("writeSchedule", this.#s.insert, values)
        : await this.#query("writeSchedule", this.#s.update, [...values, expectedVersion]);
    return rows.length === 1;
  }

  async getSchedule(id: string): Promise<ScheduleRecord | undefined> {
    const [row] = await this.#query("getSchedule", this.#s.get, [id]);
    return row && scheduleFromRow(row, true);
  }

  async listSchedules(): Promise<ScheduleRecord[]> {
    return (await this.#query("listSchedules", this.#s.list, [])).map((row) => scheduleFromRow(row, true));
  }

  async deleteSchedule(id: string): Promise<boolean> {
    return (await this.#query("deleteSchedule", this.#s.remove, [id])).length === 1;
  }

  async dueSchedules(now: number, limit: number): Promise<ScheduleRecord[]> {
    return (await this.#query("dueSchedules", this.#s.due, [now, limit])).map((row) => scheduleFromRow(row, true));
  }
}
