import { describe, expect, it } from "vitest";
import { makeServer } from "./helpers/server-fixtures.ts";

describe("HTTP API: schedules", () => {
  it("defines, lists, shows, pauses, triggers, resumes and deletes a schedule, by role", async () => {
    const { call, runtime } = makeServer();
    const definition = { agent: "desk", workflow: "ask", input: null, cron: "0 2 * * *", timeZone: "Europe/Paris" };
    expect((await call("PUT", "/api/schedules/nightly", { token: "viewer", body: definition })).status).toBe(403);
    const put = await call("PUT", "/api/schedules/nightly", { token: "operator", body: definition });
    expect(put.status).toBe(200);
    expect(put.body.schedule).toMatchObject({
      id: "nightly",
      cron: "0 2 * * *",
      overlap: "skip",
      catchUp: "latest",
      paused: false,
    });
    expect(put.body.schedule.nextTimes).toHaveLength(10);
    expect(put.body.schedule.lastRun).toBeNull();
    // 02:00 in Paris is 01:00 UTC in winter, 00:00 UTC in summer.
    expect(put.body.schedule.nextTimes.every((t: number) => [0, 1].includes(new Date(t).getUTCHours()))).toBe(true);

    const list = await call("GET", "/api/schedules", { token: "viewer" });
    expect(list.body.schedules.map((s: { id: string }) => s.id)).toEqual(["nightly"]);
    const missing = await call("GET", "/api/schedules/nope", { token: "viewer" });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("SCHEDULE_NOT_FOUND");
    const bad = await call("PUT", "/api/schedules/bad", {
      token: "operator",
      body: { ...definition, cron: "99 * * * *" },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("INVALID_INPUT");
    expect(bad.body.error.message).toContain("schedule cron");

    const paused = await call("POST", "/api/schedules/nightly/pause", { token: "operator", body: {} });
    expect(paused.body.schedule).toMatchObject({ paused: true, nextTimes: [] });
    const triggered = await call("POST", "/api/schedules/nightly/trigger", { token: "operator", body: {} });
    expect(triggered.status).toBe(202);
    expect(typeof triggered.body.runId).toBe("string");
    expect((await runtime.getRun(triggered.body.runId)).meta.schedule).toBe("nightly");
    const resumed = await call("POST", "/api/schedules/nightly/resume", { token: "operator", body: {} });
    expect(resumed.body.schedule.paused).toBe(false);
    expect(resumed.body.schedule.lastRunId).toBe(triggered.body.runId);
    // The run as it is now, and the tick it was started for: the trigger's.
    const run = await runtime.getRun(triggered.body.runId);
    expect(resumed.body.schedule.lastRun).toEqual({
      id: triggered.body.runId,
      state: run.state,
      scheduledFor: new Date(triggered.body.tickAt).toISOString(),
    });

    expect((await call("DELETE", "/api/schedules/nightly", { token: "viewer" })).status).toBe(403);
    expect((await call("DELETE", "/api/schedules/nightly", { token: "operator" })).body).toEqual({ deleted: true });
    expect((await call("GET", "/api/schedules/nightly", { token: "viewer" })).status).toBe(404);
  });

  it("refuses a trigger while the last one is being started with 400 and why, not a 500", async () => {
    const { call } = makeServer();
    // No worker here runs "archive": the first trigger's tick stays pending.
    const definition = { agent: "archive", workflow: "sweep", every: "1h" };
    expect((await call("PUT", "/api/schedules/sweep", { token: "operator", body: definition })).status).toBe(200);
    const first = await call("POST", "/api/schedules/sweep/trigger", { token: "operator", body: {} });
    expect(first.status).toBe(202);
    expect(first.body.runId).toBeNull();
    const again = await call("POST", "/api/schedules/sweep/trigger", { token: "operator", body: {} });
    expect(again.status).toBe(400);
    expect(again.body.error.code).toBe("INVALID_INPUT");
    expect(again.body.error.message).toContain("has a tick being started; trigger it again in a moment");
  });
});
