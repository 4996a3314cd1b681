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

    expect((await call("DELETE", "/api/schedules/nightly", { token: "viewer" })).status).toBe(403);
    expect((await call("DELETE", "/api/schedules/nightly", { token: "operator" })).body).toEqual({ deleted: true });
    expect((await call("GET", "/api/schedules/nightly", { token: "viewer" })).status).toBe(404);
  });
});
