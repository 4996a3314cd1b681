import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeServer, pushes } from "./helpers/server-fixtures.ts";

/** One test per route of the HTTP API (src/server/routes.ts), in-process against a real runtime. */

describe("HTTP API routes", () => {
  it("GET /api/me says who the token is", async () => {
    const s = makeServer();
    const me = await s.call("GET", "/api/me", { token: "bob" });
    expect(me).toMatchObject({ status: 200, body: { subject: "bob", roles: ["approver", "operator"], auth: "token" } });
  });

  it("GET /api/agents lists the agents with their workflows", async () => {
    const s = makeServer();
    const { status, body } = await s.call("GET", "/api/agents", { token: "viewer" });
    expect(status).toBe(200);
    expect(body.agents).toEqual([
      {
        name: "desk",
        description: "answers, approvals, signals and an effect",
        version: "3",
        workflows: ["ask", "pay", "full", "signal", "quick", "push", "talk"],
        inputs: {
          pay: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
        },
        approvers: ["alice"],
      },
    ]);
  });

  it("POST /api/runs starts a run as the token's subject, and a known key returns it with 200", async () => {
    const s = makeServer();
    const first = await s.call("POST", "/api/runs", {
      token: "operator",
      body: {
        agent: "desk",
        workflow: "quick",
        input: { a: 1 },
        key: "k-1",
        meta: { ticket: "T-9" },
        budget: { steps: 50 },
      },
    });
    expect(first.status).toBe(201);
    expect(first.body.created).toBe(true);
    expect(first.body.run).toMatchObject({ agent: "desk", workflow: "quick", key: "k-1", input: { a: 1 } });
    expect(first.body.run.meta).toMatchObject({ ticket: "T-9", budget: { steps: 50 } });
    const again = await s.call("POST", "/api/runs", {
      token: "operator",
      body: { agent: "desk", workflow: "quick", input: { a: 2 }, key: "k-1" },
    });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ created: false, run: { id: first.body.run.id, input: { a: 1 } } });
    const [created] = await s.runtime.backend.listTransitions(first.body.run.id);
    expect(created?.actor).toEqual({ kind: "user", id: "olga" });
  });

  it("POST /api/runs refuses an input its workflow's schema refuses with 400 INVALID_INPUT, starting nothing", async () => {
    const s = makeServer();
    const refused = await s.call("POST", "/api/runs", {
      token: "operator",
      body: { agent: "desk", workflow: "pay", input: { amount: "ten" } },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe("INVALID_INPUT");
    expect(refused.body.error.message).toMatch(
      /^invalid input for workflow "pay" of agent "desk": amount: .*No run was started/,
    );
    expect(await s.runtime.listRuns()).toEqual([]);
  });

  it("GET /api/runs filters by agent, workflow, state, paused reason and time, newest first, in pages", async () => {
    const s = makeServer();
    const asked = [await s.start("ask", null), await s.start("ask", null)];
    const paid = await s.start("pay", { amount: 1 });
    const done = await s.start("quick", 1, "COMPLETED");
    const page = async (query: string) => (await s.call("GET", `/api/runs${query}`, { token: "viewer" })).body;

    const all = await page("");
    expect(all.runs.map((r: { id: string }) => r.id)).toEqual([done.id, paid.id, asked[1]?.id, asked[0]?.id]);
    expect(all.nextCursor).toBeNull();
    expect((await page("?workflow=ask")).runs).toHaveLength(2);
    expect((await page("?agent=other")).runs).toHaveLength(0);
    expect((await page("?state=COMPLETED")).runs.map((r: { id: string }) => r.id)).toEqual([done.id]);
    expect((await page("?state=PAUSED,COMPLETED")).runs).toHaveLength(4);
    expect((await page("?pausedReason=awaiting_approval")).runs.map((r: { id: string }) => r.id)).toEqual([paid.id]);
    expect((await page("?state=COMPLETED&pausedReason=awaiting_user")).runs).toHaveLength(0);
    const ids = (runs: { id: string }[]) => runs.map((r) => r.id);
    const everyRun = [done, paid, asked[1], asked[0]] as { id: string; createdAt: number }[];
    expect(ids((await page(`?since=${paid.createdAt}`)).runs)).toEqual(
      ids(everyRun.filter((r) => r.createdAt >= paid.createdAt)),
    );
    expect(ids((await page(`?until=${paid.createdAt}`)).runs)).toEqual(
      ids(everyRun.filter((r) => r.createdAt <= paid.createdAt)),
    );

    // Pages of 3 and 1, across a run created between them: nothing twice, nothing skipped.
    const one = await page("?limit=3");
    expect(one.runs).toHaveLength(3);
    expect(one.nextCursor).toEqual(expect.any(String));
    const newer = await s.start("quick", 2, "COMPLETED");
    const two = await page(`?limit=3&cursor=${one.nextCursor}`);
    expect(two.runs.map((r: { id: string }) => r.id)).toEqual([asked[0]?.id]);
    expect(two.nextCursor).toBeNull();
    expect((await page("?limit=1")).runs[0].id).toBe(newer.id);
  });

  it("GET /api/runs pages stay exact while runs leave the state filtered on", async () => {
    const s = makeServer();
    const runs = [];
    for (let i = 0; i < 5; i++) runs.push(await s.start("ask", null));
    const newestFirst = runs.map((r) => r.id).reverse();
    const first = (await s.call("GET", "/api/runs?state=PAUSED&limit=2", { token: "viewer" })).body;
    expect(first.runs.map((r: { id: string }) => r.id)).toEqual(newestFirst.slice(0, 2));
    // The first page's runs are answered and leave PAUSED: an offset of 2 would now skip two runs.
    for (const run of first.runs) {
      await s.call("POST", `/api/runs/${run.id}/waits/w1/answer`, { token: "operator", body: { value: { n: 1 } } });
      await s.runtime.waitFor(run.id);
    }
    const rest = (
      await s.call("GET", `/api/runs?state=PAUSED&limit=10&cursor=${first.nextCursor}`, { token: "viewer" })
    ).body;
    expect(rest.runs.map((r: { id: string }) => r.id)).toEqual(newestFirst.slice(2));
    expect(rest.nextCursor).toBeNull();
  });

  it("GET /api/runs/:id returns the run", async () => {
    const s = makeServer();
    const run = await s.start("ask", null);
    const { status, body } = await s.call("GET", `/api/runs/${run.id}`, { token: "viewer" });
    expect(status).toBe(200);
    expect(body.run).toMatchObject({ id: run.id, state: "PAUSED", pausedReason: "awaiting_user" });
  });

  it("GET /api/runs/:id/transitions returns the transition log", async () => {
    const s = makeServer();
    const run = await s.start("ask", null);
    const { status, body } = await s.call("GET", `/api/runs/${run.id}/transitions`, { token: "viewer" });
    expect(status).toBe(200);
    expect(body.transitions.map((t: { id: number; to: string }) => [t.id, t.to])).toEqual([
      [1, "PENDING"],
      [2, "RUNNING"],
      [3, "PAUSED"],
    ]);
  });

  it("GET /api/runs/:id/steps returns the journal", async () => {
    const s = makeServer();
    const run = await s.start("ask", null);
    const { status, body } = await s.call("GET", `/api/runs/${run.id}/steps`, { token: "viewer" });
    expect(status).toBe(200);
    expect(body.steps).toHaveLength(1);
    expect(body.steps[0]).toMatchObject({ seq: 1, kind: "wait", name: "ask", status: "started" });
  });

  it("GET /api/runs/:id/effects lists the steps that carry an effect record", async () => {
    const s = makeServer();
    const run = await s.start("push", null, "NEEDS_RECONCILIATION");
    const { status, body } = await s.call("GET", `/api/runs/${run.id}/effects`, { token: "viewer" });
    expect(status).toBe(200);
    expect(body.effects).toEqual([
      {
        seq: 1,
        name: "push",
        effect: expect.objectContaining({ id: "e1", status: "unknown", namespace: "desk/push" }),
      },
    ]);
  });

  it("GET /api/runs/:id/waits shows questions and approvals with their digest and approvers", async () => {
    const s = makeServer();
    const run = await s.start("pay", { amount: 7 });
    const { status, body } = await s.call("GET", `/api/runs/${run.id}/waits`, { token: "viewer" });
    expect(status).toBe(200);
    expect(body.waits).toHaveLength(1);
    expect(body.waits[0]).toMatchObject({
      kind: "approval",
      status: "open",
      details: {
        action: "tool:pay",
        payload: { amount: 7 },
        approvers: ["alice"],
        digest: expect.stringMatching(/^sha256:/),
      },
      dueAt: expect.any(Number),
    });
  });

  it("GET /api/runs/:id/contract exports the run contract", async () => {
    const s = makeServer();
    const run = await s.start("quick", 3, "COMPLETED");
    const { status, body } = await s.call("GET", `/api/runs/${run.id}/contract`, { token: "viewer" });
    expect(status).toBe(200);
    expect(body).toMatchObject({ contract: { version: "cairn.run-contract/1" } });
    expect(JSON.stringify(body)).toContain(run.id);
  });

  it("POST /api/runs/:id/signal delivers a signal, and a repeated messageId is a duplicate", async () => {
    const s = makeServer();
    const run = await s.start("signal", null);
    const sent = await s.call("POST", `/api/runs/${run.id}/signal`, {
      token: "operator",
      body: { name: "go", payload: { x: 4 }, messageId: "m-1" },
    });
    expect(sent).toMatchObject({ status: 200, body: { duplicate: false, deliveredTo: "w1", messageId: "m-1" } });
    const again = await s.call("POST", `/api/runs/${run.id}/signal`, {
      token: "operator",
      body: { name: "go", payload: { x: 5 }, messageId: "m-1" },
    });
    expect(again.body.duplicate).toBe(true);
    expect((await s.runtime.waitFor(run.id)).output).toEqual({ x: 4 });
    const resumed = (await s.runtime.backend.listTransitions(run.id)).find((t) => t.to === "RESUMING");
    expect(resumed?.actor).toEqual({ kind: "user", id: "olga" });
  });

  it("POST /api/runs/:id/waits/:waitId/answer answers a question, recording who", async () => {
    const s = makeServer();
    const run = await s.start("ask", null);
    const { status, body } = await s.call("POST", `/api/runs/${run.id}/waits/w1/answer`, {
      token: "operator",
      body: { value: { n: 3 } },
    });
    expect(status).toBe(200);
    expect(body.wait).toMatchObject({
      id: "w1",
      status: "resolved",
      resolution: { outcome: "answered", by: { id: "olga" } },
    });
    expect((await s.runtime.waitFor(run.id)).output).toBe(3);
  });

  it("POST /api/runs/:id/approvals/:waitId/approve approves as the token's subject", async () => {
    const s = makeServer();
    const run = await s.start("pay", { amount: 7 });
    const [wait] = await s.runtime.waits(run.id);
    const digest = (wait!.details as { digest: string }).digest;
    const { status, body } = await s.call("POST", `/api/runs/${run.id}/approvals/${wait?.id}/approve`, {
      token: "alice",
      body: { digest, note: "ok" },
    });
    expect(status).toBe(200);
    expect(body.wait.resolution).toMatchObject({ outcome: "approved", by: { kind: "user", id: "alice" }, note: "ok" });
    expect((await s.runtime.waitFor(run.id)).output).toEqual({ paid: 7 });
  });

  it("POST /api/runs/:id/approvals/:waitId/deny denies, and the run ends BLOCKED", async () => {
    const s = makeServer();
    const run = await s.start("pay", { amount: 7 });
    const [wait] = await s.runtime.waits(run.id);
    const digest = (wait!.details as { digest: string }).digest;
    const { status, body } = await s.call("POST", `/api/runs/${run.id}/approvals/${wait?.id}/deny`, {
      token: "alice",
      body: { digest },
    });
    expect(status).toBe(200);
    expect(body.wait.resolution).toMatchObject({ outcome: "denied", by: { id: "alice" } });
    expect((await s.runtime.waitFor(run.id)).state).toBe("BLOCKED");
  });

  it("POST /api/runs/:id/cancel cancels a paused run with the reason and who", async () => {
    const s = makeServer();
    const run = await s.start("ask", null);
    const { status, body } = await s.call("POST", `/api/runs/${run.id}/cancel`, {
      token: "operator",
      body: { reason: "not needed" },
    });
    expect(status).toBe(200);
    expect(body.run.state).toBe("CANCELLING");
    expect((await s.runtime.waitFor(run.id)).state).toBe("CANCELLED");
    const cancelling = (await s.runtime.backend.listTransitions(run.id)).find((t) => t.to === "CANCELLING");
    expect(cancelling?.actor).toEqual({ kind: "user", id: "olga" });
    expect(cancelling?.reason).toContain("not needed");
  });

  it("POST /api/runs/:id/resume resumes an interrupted run as the token's subject", async () => {
    // No worker: the run stays where the test puts it.
    const s = makeServer({}, { worker: false });
    const handle = await s.runtime.run("desk", "quick", 1);
    const backend = s.runtime.backend;
    const claimed = await backend.claimRun({ workerId: "lost-worker", now: Date.now(), leaseMs: 60_000 });
    const fence = { epoch: claimed?.epoch ?? 0 };
    const base = {
      runId: handle.id,
      actor: { kind: "worker" as const, id: "lost-worker" },
      versions: claimed!.versions,
    };
    await backend.transition({ ...base, from: "PENDING", to: "RUNNING", reason: "claimed", at: Date.now(), fence });
    await backend.transition({
      ...base,
      from: "RUNNING",
      to: "INTERRUPTED",
      reason: "the worker was lost",
      at: Date.now(),
      fence,
      patch: { releaseLease: true },
    });
    const { status, body } = await s.call("POST", `/api/runs/${handle.id}/resume`, { token: "operator", body: {} });
    expect(status).toBe(200);
    expect(body.run.state).toBe("RESUMING");
    const last = (await backend.listTransitions(handle.id)).at(-1);
    expect(last).toMatchObject({ from: "INTERRUPTED", to: "RESUMING", actor: { kind: "user", id: "olga" } });
    const again = await s.call("POST", `/api/runs/${handle.id}/resume`, { token: "operator" });
    expect(again.status).toBe(200);
  });

  it("POST /api/runs/:id/effects/:effectId/reconcile settles an effect of unknown outcome", async () => {
    const s = makeServer();
    const before = pushes.count;
    const run = await s.start("push", null, "NEEDS_RECONCILIATION");
    const { status, body } = await s.call("POST", `/api/runs/${run.id}/effects/e1/reconcile`, {
      token: "operator",
      body: { outcome: "applied", result: { by: "hand" }, receipt: { ref: "R-1" }, note: "checked" },
    });
    expect(status).toBe(200);
    expect(body.run.state).toBe("RECONCILING");
    expect((await s.runtime.waitFor(run.id)).state).toBe("COMPLETED");
    expect(pushes.count).toBe(before + 1);
    const step = (await s.runtime.backend.loadSteps(run.id))[0];
    expect(step?.effect?.reconciliation).toMatchObject({
      outcome: "applied",
      by: { kind: "user", id: "olga" },
      note: "checked",
    });
  });

  it("POST /api/runs/:id/accept and /reject record a verdict on a completed run", async () => {
    const s = makeServer();
    const a = await s.start("quick", 1, "COMPLETED");
    const b = await s.start("quick", 2, "COMPLETED");
    const accepted = await s.call("POST", `/api/runs/${a.id}/accept`, { token: "operator", body: { note: "good" } });
    expect(accepted.status).toBe(200);
    expect(accepted.body.run.acceptance).toMatchObject({ decision: "accepted", by: { id: "olga" }, note: "good" });
    const rejected = await s.call("POST", `/api/runs/${b.id}/reject`, { token: "operator", body: {} });
    expect(rejected.body.run.acceptance).toMatchObject({ decision: "rejected", by: { id: "olga" } });
    const twice = await s.call("POST", `/api/runs/${a.id}/reject`, { token: "operator", body: {} });
    expect(twice).toMatchObject({ status: 409, body: { error: { code: "ALREADY_DECIDED" } } });
  });

  it("GET /openapi.json documents every route with its schemas", async () => {
    const s = makeServer();
    const { status, body } = await s.call("GET", "/openapi.json");
    expect(status).toBe(200);
    expect(body.openapi).toMatch(/^3\./);
    expect(Object.keys(body.paths)).toEqual(
      expect.arrayContaining(["/api/runs", "/api/runs/{id}/approvals/{waitId}/approve", "/api/events"]),
    );
    expect(body.paths["/api/runs"].post.requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/StartRun",
    });
    expect(body.components.schemas.Run.properties.state).toEqual({ $ref: "#/components/schemas/RunState" });
    expect(body.components.securitySchemes.bearer).toEqual({ type: "http", scheme: "bearer" });
    // The Prometheus scrape: a plain-text body, for an admin or the metrics token.
    const metrics = body.paths["/metrics"].get;
    expect(Object.keys(metrics.responses).sort()).toEqual(["200", "401", "403"]);
    expect(Object.keys(metrics.responses["200"].content)).toEqual(["text/plain"]);
    expect(metrics.responses["200"].content["text/plain"].schema.type).toBe("string");
    expect(metrics.responses["403"].content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/Error",
    });
    expect(metrics.security).toEqual([{ bearer: [] }]);
  });

  it("serves static files outside /api with index.html for unknown paths, and JSON 404s under /api", async () => {
    const root = mkdtempSync(join(tmpdir(), "cairn-static-"));
    writeFileSync(join(root, "index.html"), "<html>dashboard</html>");
    writeFileSync(join(root, "app.js"), "console.log(1)");
    const s = makeServer({ staticRoot: root });
    expect(await s.call("GET", "/app.js")).toMatchObject({ status: 200, body: "console.log(1)" });
    expect(await s.call("GET", "/runs/run_1")).toMatchObject({ status: 200, body: "<html>dashboard</html>" });
    expect(await s.call("GET", "/")).toMatchObject({ status: 200, body: "<html>dashboard</html>" });
    expect(await s.call("GET", "/api/nothing", { token: "viewer" })).toMatchObject({
      status: 404,
      body: { error: { code: "NOT_FOUND" } },
    });
  });
});
