import { describe, expect, it } from "vitest";
import { makeServer } from "./helpers/server-fixtures.ts";

/**
 * What the dashboard needs of the API (issue 25, item 4): each workflow's input schema and the
 * approvers the agent declares, runs found by idempotency key, and `cairn dev`'s identity switch
 * (only on a server without tokens).
 */

describe("the API the dashboard builds on", () => {
  it("serves each declared workflow input as JSON Schema, and the declared approvers", async () => {
    const { call } = makeServer();
    const { status, body } = await call("GET", "/api/agents", { token: "viewer" });
    expect(status).toBe(200);
    const desk = body.agents.find((a: { name: string }) => a.name === "desk");
    expect(desk.approvers).toEqual(["alice"]);
    expect(Object.keys(desk.inputs)).toEqual(["pay"]);
    expect(desk.inputs.pay).toMatchObject({
      type: "object",
      properties: { amount: { type: "number" } },
      required: ["amount"],
    });
    expect(desk.workflows).toContain("pay");
  });

  it("finds runs by their idempotency key", async () => {
    const { call } = makeServer();
    const keyed = await call("POST", "/api/runs", {
      token: "operator",
      body: { agent: "desk", workflow: "quick", input: 1, key: "order-77" },
    });
    await call("POST", "/api/runs", { token: "operator", body: { agent: "desk", workflow: "quick", input: 2 } });
    const found = await call("GET", "/api/runs?key=order-77", { token: "viewer" });
    expect(found.status).toBe(200);
    expect(found.body.runs.map((r: { id: string }) => r.id)).toEqual([keyed.body.run.id]);
    const none = await call("GET", "/api/runs?key=order-78", { token: "viewer" });
    expect(none.body.runs).toEqual([]);
  });

  it("acts as whoever X-Cairn-As and X-Cairn-Role name on a switchable server without tokens", async () => {
    const { call } = makeServer({ tokens: [], switchIdentity: true, localSubject: "dev" });
    const plain = await call("GET", "/api/me");
    expect(plain.body).toEqual({ subject: "dev", roles: ["admin"], auth: "none", switchable: true });
    const viewer = await call("GET", "/api/me", { headers: { "X-Cairn-As": "vera", "X-Cairn-Role": "viewer" } });
    expect(viewer.body).toMatchObject({ subject: "vera", roles: ["viewer"] });
    const refused = await call("POST", "/api/runs", {
      headers: { "X-Cairn-As": "vera", "X-Cairn-Role": "viewer" },
      body: { agent: "desk", workflow: "quick", input: 1 },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain("operator");
    const bad = await call("GET", "/api/me", { headers: { "X-Cairn-Role": "owner" } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain("viewer, operator, approver, admin");
  });

  it("decides an approval as the approver switched to, and names the approvers to whoever is not one", async () => {
    const server = makeServer({ tokens: [], switchIdentity: true });
    const run = await server.start("pay", { amount: 5 });
    const [wait] = (await server.call("GET", `/api/runs/${run.id}/waits`)).body.waits;
    const path = `/api/runs/${run.id}/approvals/${wait.id}/approve`;
    const body = { digest: wait.details.digest };
    const refused = await server.call("POST", path, { body, headers: { "X-Cairn-As": "mallory" } });
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain("its approvers are alice");
    const approved = await server.call("POST", path, {
      body,
      headers: { "X-Cairn-As": "alice", "X-Cairn-Role": "approver" },
    });
    expect(approved.status).toBe(200);
    expect(approved.body.wait.resolution.by).toEqual({ kind: "user", id: "alice" });
  });

  it("ignores the headers without switchIdentity, and on a server with tokens", async () => {
    const local = makeServer({ tokens: [] });
    expect((await local.call("GET", "/api/me", { headers: { "X-Cairn-As": "vera" } })).body).toEqual({
      subject: "local",
      roles: ["admin"],
      auth: "none",
    });
    const tokens = makeServer({ switchIdentity: true });
    const me = await tokens.call("GET", "/api/me", {
      token: "viewer",
      headers: { "X-Cairn-As": "root", "X-Cairn-Role": "admin" },
    });
    expect(me.body).toEqual({ subject: "vera", roles: ["viewer"], auth: "token" });
  });
});
