import { describe, expect, it } from "vitest";
import { untilState } from "./helpers/runtime-helpers.ts";
import { makeServer } from "./helpers/server-fixtures.ts";

/** POST /api/runs/:id/fork and /rerun (DESIGN §4, "Fork and rerun"): operator routes, 201 with the new run. */
describe("fork and rerun over HTTP", () => {
  it("forks a run from a step as an operator, with its lineage both ways; refuses viewers and bad bodies", async () => {
    const s = makeServer();
    const source = await s.start("ask", null);
    await s.runtime.answer(source.id, "w1", { n: 4 });
    await untilState(s.runtime.backend, source.id, "COMPLETED");

    expect(
      (await s.call("POST", `/api/runs/${source.id}/fork`, { token: "viewer", body: { fromStep: 1 } })).status,
    ).toBe(403);
    const bad = await s.call("POST", `/api/runs/${source.id}/fork`, { token: "operator", body: { fromStep: 0 } });
    expect(bad.status).toBe(400);
    const stray = await s.call("POST", `/api/runs/${source.id}/fork`, {
      token: "operator",
      body: { fromStep: 2, by: "x" },
    });
    expect(stray.status).toBe(400);
    const far = await s.call("POST", `/api/runs/${source.id}/fork`, { token: "operator", body: { fromStep: 9 } });
    expect(far.status).toBe(400);
    expect(far.body.error.message).toContain("between 1 and 2");

    // From step 2: the answer is kept, the run completes without asking again.
    const made = await s.call("POST", `/api/runs/${source.id}/fork`, { token: "operator", body: { fromStep: 2 } });
    expect(made.status).toBe(201);
    expect(made.body.fromStep).toBe(2);
    expect(made.body.run.forkedFrom).toMatchObject({
      runId: source.id,
      fromStep: 2,
      kind: "fork",
      by: { kind: "user", id: "olga" },
    });
    const fork = await untilState(s.runtime.backend, made.body.run.id, "COMPLETED");
    expect(fork.output).toBe(4);
    const read = await s.call("GET", `/api/runs/${source.id}`, { token: "viewer" });
    expect(read.body.run.forks).toEqual([{ runId: fork.id, fromStep: 2, kind: "fork", at: expect.any(Number) }]);
    const contract = await s.call("GET", `/api/runs/${fork.id}/contract`, { token: "viewer" });
    expect(contract.body.run.forkedFrom.runId).toBe(source.id);
  });

  it("reruns a FAILED run, and refuses one that did not fail with a message naming the fork command", async () => {
    const s = makeServer();
    const failed = await s.start("talk", null, "FAILED");
    const made = await s.call("POST", `/api/runs/${failed.id}/rerun`, { token: "operator", body: {} });
    expect(made.status).toBe(201);
    expect(made.body.run.forkedFrom).toMatchObject({ runId: failed.id, fromStep: 1, kind: "rerun" });
    const done = await s.start("quick", { x: 1 }, "COMPLETED");
    const refused = await s.call("POST", `/api/runs/${done.id}/rerun`, { token: "operator", body: {} });
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toContain(`cairn fork ${done.id} --from-step`);
  });
});
