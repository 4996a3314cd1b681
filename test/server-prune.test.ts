import { describe, expect, it } from "vitest";
import { untilState } from "./helpers/runtime-helpers.ts";
import { makeServer } from "./helpers/server-fixtures.ts";

/** POST /api/runs/prune (DESIGN §7, "Retention"): admin only, a dry run first, then the prune. */
describe("prune over HTTP", () => {
  it("prunes ended runs as an admin, lists them on a dry run, keeps open runs; refuses others and bad bodies", async () => {
    const s = makeServer();
    const done = await s.start("quick", { x: 1 }, "COMPLETED");
    const open = await s.start("ask", null);
    await untilState(s.runtime.backend, open.id, "PAUSED");
    await new Promise((resolve) => setTimeout(resolve, 5));

    const call = (token: string, body: unknown) => s.call("POST", "/api/runs/prune", { token, body });
    expect((await call("operator", { olderThan: 1 })).status).toBe(403);
    const bad = await call("admin", { olderThan: "30x" });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('"30d", "12h"');
    const openState = await call("admin", { olderThan: 1, states: ["PAUSED"] });
    expect(openState.status).toBe(400);
    expect(openState.body.error.message).toContain("only ended runs are pruned");
    expect((await call("admin", { olderThan: 1, by: "x" })).status).toBe(400);

    const dry = await call("admin", { olderThan: 1, dryRun: true });
    expect(dry.status).toBe(200);
    expect(dry.body).toMatchObject({ pruned: 1, runIds: [done.id], dryRun: true });
    expect((await s.call("GET", `/api/runs/${done.id}`, { token: "viewer" })).status).toBe(200);
    const pruned = await call("admin", { olderThan: 1, batchSize: 10 });
    expect(pruned.body).toMatchObject({ pruned: 1, runIds: [done.id], batches: 1, dryRun: false });
    expect((await s.call("GET", `/api/runs/${done.id}`, { token: "viewer" })).status).toBe(404);
    expect((await s.call("GET", `/api/runs/${open.id}`, { token: "viewer" })).body.run.state).toBe("PAUSED");
  });
});
