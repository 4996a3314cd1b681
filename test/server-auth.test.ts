import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadTokens, parseTokensEnv, TokenConfigError } from "../src/server/auth.ts";
import { InsecureBindError, NO_AUTH_NOTICE, serve } from "../src/server/serve.ts";
import { makeServer, TOKENS } from "./helpers/server-fixtures.ts";

/** The auth rules of the HTTP API: tokens, roles, who is recorded, and binding without tokens. */

/** What a run has recorded: its transitions and waits (to show a refused call changed nothing). */
async function recorded(s: ReturnType<typeof makeServer>, runId: string) {
  const [run, transitions, waits] = await Promise.all([
    s.runtime.getRun(runId),
    s.runtime.backend.listTransitions(runId),
    s.runtime.waits(runId),
  ]);
  return { state: run.state, transitions: transitions.length, waits: JSON.stringify(waits) };
}

async function approval(s: ReturnType<typeof makeServer>) {
  const run = await s.start("pay", { amount: 7 });
  const [wait] = await s.runtime.waits(run.id);
  return { run, wait: wait!, digest: (wait!.details as { digest: string }).digest };
}

describe("authentication", () => {
  it("refuses a request without a token with 401 UNAUTHENTICATED, and changes nothing", async () => {
    const s = makeServer();
    const read = await s.call("GET", "/api/runs");
    expect(read.status).toBe(401);
    expect(read.body.error.code).toBe("UNAUTHENTICATED");
    expect(read.headers.get("www-authenticate")).toMatch(/^Bearer/);
    const start = await s.call("POST", "/api/runs", { body: { agent: "desk", workflow: "quick", input: 1 } });
    expect(start).toMatchObject({ status: 401, body: { error: { code: "UNAUTHENTICATED" } } });
    expect(await s.runtime.listRuns()).toHaveLength(0);
  });

  it("refuses an unknown token and a malformed Authorization header with 401", async () => {
    const s = makeServer();
    const unknown = await s.call("GET", "/api/me", { token: "not-a-token-of-this-server" });
    expect(unknown).toMatchObject({ status: 401, body: { error: { code: "UNAUTHENTICATED" } } });
    const basic = await s.call("GET", "/api/me", { headers: { Authorization: `Basic ${TOKENS.admin}` } });
    expect(basic).toMatchObject({ status: 401, body: { error: { code: "UNAUTHENTICATED" } } });
  });

  it("never takes a token in the URL, event streams included, and says why", async () => {
    const s = makeServer();
    const plain = await s.call("GET", `/api/me?access_token=${TOKENS.viewer}`);
    expect(plain.status).toBe(401);
    const run = await s.start("quick", 1, "COMPLETED");
    for (const path of [`/api/runs/${run.id}/events`, "/api/events"]) {
      const refused = await s.call("GET", `${path}?access_token=${TOKENS.viewer}`);
      expect(refused.status).toBe(401);
      expect(refused.body.error.message).toMatch(/^a token in the URL \(\?access_token=\) is not accepted/);
    }
    // With the header, the stream is served.
    const response = await s.server.app.request(`/api/runs/${run.id}/events`, {
      headers: { Authorization: `Bearer ${TOKENS.viewer}` },
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain("event: end");
  });

  it("does not need a token for the OpenAPI document", async () => {
    const s = makeServer();
    expect((await s.call("GET", "/openapi.json")).status).toBe(200);
  });
});

describe("roles", () => {
  it("refuses a viewer's start, signal, answer and cancel with 403 FORBIDDEN, and changes nothing", async () => {
    const s = makeServer();
    const run = await s.start("ask", null);
    const before = await recorded(s, run.id);
    for (const [path, body] of [
      ["/api/runs", { agent: "desk", workflow: "quick", input: 1 }],
      [`/api/runs/${run.id}/signal`, { name: "go" }],
      [`/api/runs/${run.id}/waits/w1/answer`, { value: { n: 1 } }],
      [`/api/runs/${run.id}/cancel`, {}],
      [`/api/runs/${run.id}/resume`, {}],
      [`/api/runs/${run.id}/accept`, {}],
    ] as const) {
      const refused = await s.call("POST", path, { token: "viewer", body });
      expect(refused.status, path).toBe(403);
      expect(refused.body.error.code).toBe("FORBIDDEN");
      expect(refused.body.error.details).toMatchObject({ needs: ["operator", "admin"], roles: ["viewer"] });
    }
    expect(await recorded(s, run.id)).toEqual(before);
    expect(await s.runtime.listRuns()).toHaveLength(1);
  });

  it("refuses an operator's approval and an approver's operations with 403", async () => {
    const s = makeServer();
    const { run, wait, digest } = await approval(s);
    const before = await recorded(s, run.id);
    const byOperator = await s.call("POST", `/api/runs/${run.id}/approvals/${wait.id}/approve`, {
      token: "operator",
      body: { digest },
    });
    expect(byOperator).toMatchObject({ status: 403, body: { error: { code: "FORBIDDEN" } } });
    const byApprover = await s.call("POST", `/api/runs/${run.id}/cancel`, { token: "alice", body: {} });
    expect(byApprover).toMatchObject({ status: 403, body: { error: { code: "FORBIDDEN" } } });
    expect(await recorded(s, run.id)).toEqual(before);
    // Every role reads.
    expect((await s.call("GET", `/api/runs/${run.id}/waits`, { token: "alice" })).status).toBe(200);
    expect((await s.call("GET", `/api/runs/${run.id}`, { token: "operator" })).status).toBe(200);
  });

  it("checks the role before the body: a viewer's malformed body is 403, not 400", async () => {
    const s = makeServer();
    const refused = await s.call("POST", "/api/runs", { token: "viewer", raw: "{not json" });
    expect(refused).toMatchObject({ status: 403, body: { error: { code: "FORBIDDEN" } } });
  });

  it("lets an admin do everything but decide for approvers it is not one of", async () => {
    const s = makeServer();
    const started = await s.call("POST", "/api/runs", {
      token: "admin",
      body: { agent: "desk", workflow: "quick", input: 1 },
    });
    expect(started.status).toBe(201);
    const { run, wait, digest } = await approval(s);
    const refused = await s.call("POST", `/api/runs/${run.id}/approvals/${wait.id}/approve`, {
      token: "admin",
      body: { digest },
    });
    expect(refused).toMatchObject({
      status: 403,
      body: { error: { code: "APPROVAL_REFUSED", details: { why: "not_an_approver" } } },
    });
  });
});

describe("approvals", () => {
  it("refuses an approval by an approver the approval does not list (403 APPROVAL_REFUSED), deciding nothing", async () => {
    const s = makeServer();
    const { run, wait, digest } = await approval(s);
    const before = await recorded(s, run.id);
    for (const verb of ["approve", "deny"]) {
      const refused = await s.call("POST", `/api/runs/${run.id}/approvals/${wait.id}/${verb}`, {
        token: "bob",
        body: { digest },
      });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({ code: "APPROVAL_REFUSED", details: { why: "not_an_approver" } });
      expect(refused.body.error.message).toContain("bob may not decide");
    }
    expect(await recorded(s, run.id)).toEqual(before);
  });

  it("records the approver's identity from the token, and refuses one named in the body", async () => {
    const s = makeServer();
    const { run, wait, digest } = await approval(s);
    const before = await recorded(s, run.id);
    const smuggled = await s.call("POST", `/api/runs/${run.id}/approvals/${wait.id}/approve`, {
      token: "bob",
      body: { digest, by: "alice" },
    });
    expect(smuggled.status).toBe(400);
    expect(smuggled.body.error.code).toBe("INVALID_INPUT");
    expect(smuggled.body.error.message).toContain("taken from the bearer token");
    expect(await recorded(s, run.id)).toEqual(before);

    const approved = await s.call("POST", `/api/runs/${run.id}/approvals/${wait.id}/approve`, {
      token: "alice",
      body: { digest },
    });
    expect(approved.status).toBe(200);
    const [decided] = await s.runtime.waits(run.id);
    expect(decided?.resolution).toMatchObject({ outcome: "approved", by: { kind: "user", id: "alice" } });
    const resuming = (await s.runtime.backend.listTransitions(run.id)).find((t) => t.to === "RESUMING");
    expect(resuming?.actor).toEqual({ kind: "user", id: "alice" });
    expect((await s.runtime.waitFor(run.id)).state).toBe("COMPLETED");
  });

  it("refuses a digest that is not the payload's with 409, deciding nothing", async () => {
    const s = makeServer();
    const { run, wait } = await approval(s);
    const before = await recorded(s, run.id);
    const refused = await s.call("POST", `/api/runs/${run.id}/approvals/${wait.id}/approve`, {
      token: "alice",
      body: { digest: "sha256:0000" },
    });
    expect(refused).toMatchObject({
      status: 409,
      body: { error: { code: "APPROVAL_REFUSED", details: { why: "wrong_digest" } } },
    });
    expect(await recorded(s, run.id)).toEqual(before);
  });

  it("refuses a second decision with 409 WAIT_CLOSED", async () => {
    const s = makeServer();
    const { run, wait, digest } = await approval(s);
    const path = `/api/runs/${run.id}/approvals/${wait.id}`;
    expect((await s.call("POST", `${path}/deny`, { token: "alice", body: { digest } })).status).toBe(200);
    await s.runtime.waitFor(run.id);
    const again = await s.call("POST", `${path}/approve`, { token: "alice", body: { digest } });
    expect(again.status).toBe(409);
    expect(["WAIT_CLOSED", "RUN_NOT_OPEN"]).toContain(again.body.error.code);
  });
});

describe("without tokens", () => {
  it("acts as the local admin and records the actor as local", async () => {
    const s = makeServer({ tokens: [] });
    expect(s.server.auth).toBe("none");
    expect((await s.call("GET", "/api/me")).body).toEqual({ subject: "local", roles: ["admin"], auth: "none" });
    const started = await s.call("POST", "/api/runs", { body: { agent: "desk", workflow: "quick", input: 1 } });
    expect(started.status).toBe(201);
    const [first] = await s.runtime.backend.listTransitions(started.body.run.id);
    expect(first?.actor).toEqual({ kind: "user", id: "local" });
  });

  it("acts as the local subject it is given (cairn dev --as), deciding approvals as it", async () => {
    const s = makeServer({ tokens: [], localSubject: "alice" });
    expect((await s.call("GET", "/api/me")).body).toEqual({ subject: "alice", roles: ["admin"], auth: "none" });
    const run = await s.start("pay", { amount: 3 });
    const [wait] = await s.runtime.waits(run.id);
    const approved = await s.call("POST", `/api/runs/${run.id}/approvals/${wait!.id}/approve`, {
      body: { digest: (wait!.details as { digest: string }).digest },
    });
    expect(approved.body.wait.resolution.by).toEqual({ kind: "user", id: "alice" });
  });

  it("listens on loopback only and says so; any other address is refused, naming the fix", async () => {
    const s = makeServer({ tokens: [] });
    await expect(serve(s.server, { host: "0.0.0.0", port: 0 })).rejects.toThrow(InsecureBindError);
    await expect(serve(s.server, { host: "192.168.1.10", port: 0 })).rejects.toThrow(/CAIRN_TOKENS/);
    const printed: string[] = [];
    const listening = await serve(s.server, { host: "127.0.0.1", port: 0, print: (l) => printed.push(l) });
    try {
      expect(listening.auth).toBe("none");
      expect(listening.notice).toBe(NO_AUTH_NOTICE);
      expect(printed).toEqual([NO_AUTH_NOTICE]);
      const me = await fetch(`${listening.url}/api/me`);
      expect(await me.json()).toMatchObject({ subject: "local", auth: "none" });
    } finally {
      await listening.close();
    }
  });

  it("with tokens, says nothing about auth being off", async () => {
    const s = makeServer();
    const printed: string[] = [];
    const listening = await serve(s.server, { port: 0, print: (l) => printed.push(l) });
    try {
      expect(listening).toMatchObject({ auth: "token", notice: undefined });
      expect(printed).toEqual([]);
      expect((await fetch(`${listening.url}/api/me`)).status).toBe(401);
    } finally {
      await listening.close();
    }
  });
});

describe("token configuration", () => {
  it("reads CAIRN_TOKENS as token:subject:role+role, comma-separated", () => {
    const tokens = loadTokens({
      env: { CAIRN_TOKENS: "aaaaaaaaaaaaaaaa1:alice:approver+operator, bbbbbbbbbbbbbbbb2:dash:viewer" },
    });
    expect(tokens).toEqual([
      { token: "aaaaaaaaaaaaaaaa1", subject: "alice", roles: ["approver", "operator"] },
      { token: "bbbbbbbbbbbbbbbb2", subject: "dash", roles: ["viewer"] },
    ]);
    expect(loadTokens({ env: {} })).toEqual([]);
  });

  it("reads a JSON or YAML file, and merges it with CAIRN_TOKENS", () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-tokens-"));
    const json = join(dir, "tokens.json");
    writeFileSync(json, JSON.stringify([{ token: "cccccccccccccccc3", subject: "carol", roles: ["admin"] }]));
    const yaml = join(dir, "tokens.yaml");
    writeFileSync(yaml, "tokens:\n  - token: dddddddddddddddd4\n    subject: dan\n    roles: [viewer]\n");
    expect(loadTokens({ file: json, env: {} })).toEqual([
      { token: "cccccccccccccccc3", subject: "carol", roles: ["admin"] },
    ]);
    expect(loadTokens({ file: yaml, env: { CAIRN_TOKENS: "eeeeeeeeeeeeeeee5:eve:operator" } })).toEqual([
      { token: "dddddddddddddddd4", subject: "dan", roles: ["viewer"] },
      { token: "eeeeeeeeeeeeeeee5", subject: "eve", roles: ["operator"] },
    ]);
  });

  it("refuses short tokens, unknown roles, missing fields and duplicates, naming the entry", () => {
    expect(() => parseTokensEnv("short:alice:admin")).toThrow(/entry 1 .*at least 16 characters/);
    expect(() => parseTokensEnv("aaaaaaaaaaaaaaaa1:alice:boss")).toThrow(TokenConfigError);
    expect(() => parseTokensEnv("aaaaaaaaaaaaaaaa1:alice")).toThrow(/3/);
    expect(() => parseTokensEnv("aaaaaaaaaaaaaaaa1::admin")).toThrow(/subject/);
    expect(() =>
      loadTokens({ env: { CAIRN_TOKENS: "aaaaaaaaaaaaaaaa1:alice:admin,aaaaaaaaaaaaaaaa1:bob:viewer" } }),
    ).toThrow(/twice/);
    expect(() => loadTokens({ file: "/nonexistent/tokens.json", env: {} })).toThrow(/cannot read the tokens file/);
  });
});
