import type { ScheduleRecord } from "../../core/schedules.ts";
import type { ScheduleStore } from "../contract/schedule-store.ts";

/** The schedules of `InMemoryBackend` (`ScheduleStore`): records by id, compared and set in this process. */
export class MemorySchedules implements ScheduleStore {
  readonly #records = new Map<string, ScheduleRecord>();

  async writeSchedule(record: ScheduleRecord, expectedVersion: number): Promise<boolean> {
    const stored = this.#records.get(record.id);
    if ((stored?.version ?? 0) !== expectedVersion) return false;
    this.#records.set(record.id, structuredClone(record));
    return true;
  }

  async getSchedule(id: string): Promise<ScheduleRecord | undefined> {
    const stored = this.#records.get(id);
    return stored && structuredClone(stored);
  }

  async listSchedules(): Promise<ScheduleRecord[]> {
    return [...this.#records.values()].sort((a, b) => (a.id < b.id ? -1 : 1)).map((r) => structuredClone(r));
  }

  async deleteSchedule(id: string): Promise<boolean> {
    return this.#records.delete(id);
  }

  async dueSchedules(now: number, limit: number): Promise<ScheduleRecord[]> {
    return (await this.listSchedules())
      .filter(
        (r) => r.pendingAt !== null || (!r.paused && ((r.nextAt !== null && r.nextAt <= now) || r.bufferedAt !== null)),
      )
      .slice(0, limit);
  }
}
