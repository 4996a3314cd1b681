import { describe, expect, it } from "vitest";
import { defineAgent } from "../src/agent/define.ts";
import { InvalidDefinitionError, ScheduleNotFoundError } from "../src/core/errors.ts";
import { defineSchedule } from "../src/core/schedules.ts";
import { TestRuntime } from "../src/runtime/test-runtime.ts";

const DAY = 86_400_000;

/** A nightly job; `hold` runs wait for a signal, so that the next tick finds them still going. */
const nightly = defineAgent({
  name: "nightly",
  tools: {},
  workflows: {
    async report(ctx, input: { hold?: boolean } | null) {
      if (input?.hold) await ctx.waitForSignal("go");
      return { done: true };
    },
  },
});

/** The hour and minute of `at` in `timeZone`, as "HH:MM". */
function localTime(at: number, timeZone: string): string {
  return new Intl.DateTimeFormat("en-GB", { timeZone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(
    at,
  );
}

async function scheduledRuns(t: TestRuntime, id: string) {
  const runs = await t.listRuns({ agent: "nightly", limit: 10_000 });
  return runs
    .filter((r) => r.meta.schedule === id)
    .map((r) => ({ run: r, tick: Date.parse(String(r.meta.scheduledFor)) }))
    .sort((a, b) => a.tick - b.tick);
}

describe("schedules on the virtual clock", () => {
  it("runs a nightly schedule 365 times over 2026 at 02:00 New York time, across both DST changes", async () => {
    const t = new TestRuntime({ agents: [nightly], startAt: Date.parse("2025-12-31T12:00:00Z") });
    await t.start();
    try {
      await t.schedule({
        id: "nightly",
        agent: nightly,
        workflow: "report",
        cron: "0 2 * * *",
        timeZone: "America/New_York",
        overlap: "allow",
      });
      const view = await t.schedules.get("nightly");
      expect(view.nextTimes).toHaveLength(10);
      expect(new Date(view.nextTimes[0] as number).toISOString()).toBe("2026-01-01T07:00:00.000Z");
      await t.advanceSchedules(Date.parse("2026-12-31T12:00:00Z") - t.clock.now());
      const runs = await scheduledRuns(t, "nightly");
      expect(runs).toHaveLength(365);
      expect(new Set(runs.map((r) => r.run.key)).size).toBe(365);
      // One run per local day, at 02:00 local time; on the spring-forward day 02:00 does not
      // exist and the run is at 03:00 (croner moves it to the first minute after the gap).
      const days = new Set(runs.map((r) => new Date(r.tick - 5 * 3_600_000).toISOString().slice(0, 10)));
      expect(days.size).toBe(365);
      const times = runs.map((r) => localTime(r.tick, "America/New_York"));
      expect(times.filter((x) => x === "02:00")).toHaveLength(364);
      expect(runs.find((r) => localTime(r.tick, "America/New_York") !== "02:00")?.run.meta.scheduledFor).toBe(
        "2026-03-08T07:00:00.000Z",
      );
      // UTC offset -5 in winter, -4 in summer.
      expect(runs.find((r) => r.run.meta.scheduledFor === "2026-07-01T06:00:00.000Z")).toBeDefined();
      expect(runs.find((r) => r.run.meta.scheduledFor === "2026-12-01T07:00:00.000Z")).toBeDefined();
      for (const { run } of runs.slice(0, 5)) expect((await t.waitFor(run.id)).state).toBe("COMPLETED");
    } finally {
      await t.shutdown();
    }
  });

  it("skips a tick while the previous run goes on, and buffers one under bufferOne", async () => {
    const t = new TestRuntime({ agents: [nightly] });
    await t.start();
    try {
      await t.schedule({ id: "skip", agent: "nightly", workflow: "report", input: { hold: true }, every: "1h" });
      await t.schedule({
        id: "buffer",
        agent: "nightly",
        workflow: "report",
        input: { hold: true },
        every: "1h",
        overlap: "bufferOne",
      });
      await t.advanceSchedules(3 * 3_600_000 + 1);
      const skipRuns = await scheduledRuns(t, "skip");
      const bufferRuns = await scheduledRuns(t, "buffer");
      expect(skipRuns).toHaveLength(1);
      expect(bufferRuns).toHaveLength(1);
      expect((await t.schedules.get("buffer")).bufferedAt).toBe(
        bufferRuns[0]?.tick ? (bufferRuns[0].tick as number) + 3_600_000 : -1,
      );
      await t.signal(bufferRuns[0]?.run.id as string, "go");
      await t.waitFor(bufferRuns[0]?.run.id as string);
      await t.schedules.fireDue();
      const after = await scheduledRuns(t, "buffer");
      expect(after).toHaveLength(2);
      expect(after[1]?.tick).toBe((after[0]?.tick as number) + 3_600_000);
      expect((await t.schedules.get("buffer")).bufferedAt).toBeNull();
    } finally {
      await t.shutdown();
    }
  });

  it("cancels the previous run under cancelPrevious", async () => {
    const t = new TestRuntime({ agents: [nightly] });
    await t.start();
    try {
      await t.schedule({
        id: "c",
        agent: "nightly",
        workflow: "report",
        input: { hold: true },
        every: "1h",
        overlap: "cancelPrevious",
      });
      await t.advanceSchedules(2 * 3_600_000 + 1);
      const runs = await scheduledRuns(t, "c");
      expect(runs).toHaveLength(2);
      expect((await t.waitFor(runs[0]?.run.id as string)).state).toBe("CANCELLED");
      expect((await t.getRun(runs[1]?.run.id as string)).state).not.toBe("CANCELLED");
    } finally {
      await t.shutdown();
    }
  });

  it("catches up after downtime as its policy says: none, latest, or all (bounded)", async () => {
    const t = new TestRuntime({ agents: [nightly], worker: false });
    await t.start();
    const define = (id: string, catchUp: "none" | "latest" | "all") =>
      t.schedule({ id, agent: "nightly", workflow: "report", every: "1d", catchUp, catchUpLimit: 3, overlap: "allow" });
    await define("none", "none");
    await define("latest", "latest");
    await define("all", "all");
    await t.shutdown();
    // Five days pass with no worker; then one starts, 2 hours after the fifth tick.
    const start = t.clock.now();
    const worker = new TestRuntime({ agents: [nightly], backend: t.backend, startAt: start + 5 * DAY + 2 * 3_600_000 });
    await worker.start();
    try {
      await worker.schedules.fireDue();
      expect((await scheduledRuns(worker, "none")).length).toBe(0);
      const latest = await scheduledRuns(worker, "latest");
      expect(latest.map((r) => r.tick)).toEqual([start + 5 * DAY]);
      const all = await scheduledRuns(worker, "all");
      expect(all.map((r) => r.tick)).toEqual([start + 3 * DAY, start + 4 * DAY, start + 5 * DAY]);
      for (const id of ["none", "latest", "all"]) expect((await worker.schedules.get(id)).nextAt).toBe(start + 6 * DAY);
    } finally {
      await worker.shutdown();
    }
  });

  it("pauses, resumes from the next tick, triggers now and deletes", async () => {
    const t = new TestRuntime({ agents: [nightly] });
    await t.start();
    try {
      await t.schedule(defineSchedule({ id: "p", agent: "nightly", workflow: "report", every: "1h" }));
      await t.schedules.pause("p");
      expect((await t.schedules.get("p")).nextTimes).toEqual([]);
      await t.advanceSchedules(5 * 3_600_000);
      expect(await scheduledRuns(t, "p")).toHaveLength(0);
      const resumed = await t.schedules.resume("p");
      expect(resumed.nextAt).toBe(t.clock.now() + 3_600_000);
      await t.schedules.pause("p");
      const { runId, tickAt } = await t.schedules.trigger("p");
      expect(runId).not.toBeNull();
      expect(tickAt).toBe(t.clock.now());
      expect((await t.getRun(runId as string)).meta).toMatchObject({
        schedule: "p",
        scheduledFor: new Date(tickAt).toISOString(),
      });
      expect((await t.schedules.get("p")).lastRunId).toBe(runId);
      await t.schedules.delete("p");
      await expect(t.schedules.get("p")).rejects.toBeInstanceOf(ScheduleNotFoundError);
      await expect(t.schedules.delete("p")).rejects.toBeInstanceOf(ScheduleNotFoundError);
    } finally {
      await t.shutdown();
    }
  });

  it("refuses a definition that cannot work, naming the problem", () => {
    expect(() => defineSchedule({ id: "x", agent: "a", workflow: "w" })).toThrow(/exactly one of `cron`/);
    expect(() => defineSchedule({ id: "x", agent: "a", workflow: "w", cron: "61 * * * *" })).toThrow(
      InvalidDefinitionError,
    );
    expect(() =>
      defineSchedule({ id: "x", agent: "a", workflow: "w", cron: "0 2 * * *", timeZone: "Mars/Olympus" }),
    ).toThrow(/time zone "Mars\/Olympus"/);
    expect(() => defineSchedule({ id: "x", agent: "a", workflow: "w", every: "10ms" })).toThrow(/at least 1000/);
    expect(() => defineSchedule({ id: "bad id", agent: "a", workflow: "w", every: "1s" })).toThrow(/the id must be/);
  });
});
