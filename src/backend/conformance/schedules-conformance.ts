import { describe, expect, it } from "vitest";
import type { ScheduleRecord } from "../../core/schedules.ts";
import type { ScheduleStore } from "../contract/schedule-store.ts";
import { T0, type UseBackend } from "./conformance-fixtures.ts";

/** A schedule record at version 1, with `over` applied. */
function scheduleOf(id: string, over: Partial<ScheduleRecord> = {}): ScheduleRecord {
  return {
    id,
    agent: "reports",
    workflow: "build",
    input: { scope: "all", n: 1 },
    cron: null,
    timeZone: null,
    everyMs: 60_000,
    overlap: "skip",
    catchUp: "latest",
    catchUpLimit: 100,
    paused: false,
    nextAt: T0 + 60_000,
    lastTickAt: null,
    lastRunId: null,
    pendingAt: null,
    bufferedAt: null,
    version: 1,
    createdAt: T0,
    updatedAt: T0,
    ...over,
  };
}

function storeOf(use: UseBackend): ScheduleStore {
  const store = use().schedules;
  if (!store) throw new Error("the backend has no `schedules` role");
  return store;
}

/** The schedules role: records compared and set on their version, and the due ones listed. */
export function describeSchedules(use: UseBackend): void {
  describe("schedules", () => {
    it("creates a schedule once, reads every field back, lists by id and deletes it", async () => {
      const s = storeOf(use);
      const cron = scheduleOf("nightly", {
        cron: "0 2 * * *",
        timeZone: "Europe/Paris",
        everyMs: null,
        overlap: "bufferOne",
        catchUp: "all",
        catchUpLimit: 7,
        paused: true,
        lastTickAt: T0,
        lastRunId: "run-1",
        pendingAt: T0 + 1,
        bufferedAt: T0 + 2,
        input: [1, "two", null, { three: true }],
      });
      expect(await s.writeSchedule(cron, 0)).toBe(true);
      expect(await s.writeSchedule(scheduleOf("nightly"), 0)).toBe(false);
      expect(await s.writeSchedule(scheduleOf("a-first"), 0)).toBe(true);
      expect(await s.getSchedule("nightly")).toEqual(cron);
      expect((await s.listSchedules()).map((r) => r.id)).toEqual(["a-first", "nightly"]);
      expect(await s.deleteSchedule("nightly")).toBe(true);
      expect(await s.deleteSchedule("nightly")).toBe(false);
      expect(await s.getSchedule("nightly")).toBeUndefined();
    });

    it("writes only over the version expected: of two writers of one version, one wins", async () => {
      const s = storeOf(use);
      await s.writeSchedule(scheduleOf("tick"), 0);
      const a = scheduleOf("tick", { version: 2, lastTickAt: T0 + 60_000, nextAt: T0 + 120_000 });
      const b = scheduleOf("tick", { version: 2, lastTickAt: T0 + 60_000, pendingAt: T0 + 60_000 });
      const results = await Promise.all([s.writeSchedule(a, 1), s.writeSchedule(b, 1)]);
      expect(results.filter(Boolean)).toHaveLength(1);
      const stored = await s.getSchedule("tick");
      expect(stored).toEqual(results[0] ? a : b);
      expect(await s.writeSchedule(scheduleOf("tick", { version: 3 }), 1)).toBe(false);
      expect(await s.writeSchedule(scheduleOf("tick", { version: 3, paused: true }), 2)).toBe(true);
      expect((await s.getSchedule("tick"))?.paused).toBe(true);
    });

    it("lists as due the schedules with a pending tick, or not paused with a tick due or buffered, by id", async () => {
      const s = storeOf(use);
      const now = T0 + 60_000;
      await s.writeSchedule(scheduleOf("due", { nextAt: now }), 0);
      await s.writeSchedule(scheduleOf("later", { nextAt: now + 1 }), 0);
      await s.writeSchedule(scheduleOf("paused", { nextAt: now - 1, paused: true }), 0);
      await s.writeSchedule(scheduleOf("pending", { nextAt: now + 1, pendingAt: now - 5 }), 0);
      await s.writeSchedule(scheduleOf("buffered", { nextAt: now + 1, bufferedAt: now - 5 }), 0);
      await s.writeSchedule(scheduleOf("ended", { nextAt: null }), 0);
      await s.writeSchedule(scheduleOf("paused-buffered", { paused: true, bufferedAt: now - 5 }), 0);
      await s.writeSchedule(scheduleOf("paused-pending", { paused: true, pendingAt: now - 5 }), 0);
      expect((await s.dueSchedules(now, 10)).map((r) => r.id)).toEqual([
        "buffered",
        "due",
        "paused-pending",
        "pending",
      ]);
      expect((await s.dueSchedules(now, 2)).map((r) => r.id)).toEqual(["buffered", "due"]);
    });
  });
}
