import { describe, expect, it } from "vitest";
import { StorageError } from "../src/core/errors.ts";
import { ERROR_STATUS, errorResponse } from "../src/server/errors.ts";
import { makeServer, TOKENS } from "./helpers/server-fixtures.ts";

/**
 * Bad input over HTTP: each case is a JSON error `{ error: { code, message } }` with the status of
 * the error table, and none changes anything stored.
 */

type Server = ReturnType<typeof makeServer>;

/** Everything stored: every run with its transitions, waits and steps. */
async function everything(s: Server): Promise<string> {
  const runs = await s.runtime.listRuns({ limit: 1000 });
  const all = await Promise.all(runs.map((r) => s.runtime.history(r.id)));
  return JSON.stringify(all);
}

async function expectError(
  s: Server,
  request: Promise<{ status: number; body: any; headers: Headers }>,
  status: number,
  code: string,
): Promise<{ code: string; message: string; details?: any }> {
  const before = await everything(s);
  const response = await request;
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  expect(response.body.error.code).toBe(code);
  expect(response.body.error.message).toEqual(expect.any(String));
  expect(await everything(s)).toBe(before);
  return response.body.error;
}

describe("bad input over HTTP", () => {
  it("malformed JSON is 400 MALFORMED_JSON", async () => {
    const s = makeServer();
    const run = await s.start("signal", null);
    const error = await expectError(
      s,
      s.call("POST", `/api/runs/${run.id}/signal`, { token: "operator", raw: '{"name": "go",' }),
      400,
      "MALFORMED_JSON",
    );
    expect(error.message).toContain("not valid JSON");
    await expectError(
      s,
      s.call("POST", "/api/runs", {
        token: "operator",
        raw: "\u00ff\u00fe",
        headers: { "Content-Type": "application/json" },
      }),
      400,
      "MALFORMED_JSON",
    );
  });

  it("wrong types are 400 INVALID_INPUT naming the field", async () => {
    const s = makeServer();
    const run = await s.start("signal", null);
    const error = await expectError(
      s,
      s.call("POST", `/api/runs/${run.id}/signal`, { token: "operator", body: { name: 5 } }),
      400,
      "INVALID_INPUT",
    );
    expect(error.details.issues[0]).toMatchObject({ path: ["name"] });
    expect(error.message).toContain("name:");
    await expectError(
      s,
      s.call("POST", "/api/runs", { token: "operator", body: { agent: "desk", workflow: ["quick"], input: 1 } }),
      400,
      "INVALID_INPUT",
    );
    await expectError(
      s,
      s.call("POST", "/api/runs", {
        token: "operator",
        body: { agent: "desk", workflow: "quick", input: 1, budget: { steps: -1 } },
      }),
      400,
      "INVALID_INPUT",
    );
    await expectError(s, s.call("POST", "/api/runs", { token: "operator", body: [1, 2] }), 400, "INVALID_INPUT");
    await expectError(s, s.call("GET", "/api/runs?limit=500", { token: "viewer" }), 400, "INVALID_INPUT");
    await expectError(s, s.call("GET", "/api/runs?state=NAPPING", { token: "viewer" }), 400, "INVALID_INPUT");
    await expectError(s, s.call("GET", "/api/runs?cursor=bogus", { token: "viewer" }), 400, "INVALID_INPUT");
    await expectError(
      s,
      s.call("POST", `/api/runs/${run.id}/resume`, { token: "operator", body: { force: true } }),
      400,
      "INVALID_INPUT",
    );
  });

  it("an answer that does not match the question's schema is 400 INVALID_INPUT, and the run keeps waiting", async () => {
    const s = makeServer();
    const run = await s.start("ask", null);
    const error = await expectError(
      s,
      s.call("POST", `/api/runs/${run.id}/waits/w1/answer`, { token: "operator", body: { value: { n: 0 } } }),
      400,
      "INVALID_INPUT",
    );
    expect(error.message).toContain("keeps waiting");
    expect((await s.runtime.getRun(run.id)).state).toBe("PAUSED");
  });

  it("an unknown run is 404 RUN_NOT_FOUND, on reads and on acts", async () => {
    const s = makeServer();
    await s.start("quick", 1, "COMPLETED");
    for (const path of ["", "/transitions", "/steps", "/effects", "/waits", "/contract", "/events"]) {
      await expectError(s, s.call("GET", `/api/runs/run_nope${path}`, { token: "viewer" }), 404, "RUN_NOT_FOUND");
    }
    await expectError(
      s,
      s.call("POST", "/api/runs/run_nope/signal", { token: "operator", body: { name: "go" } }),
      404,
      "RUN_NOT_FOUND",
    );
    await expectError(
      s,
      s.call("POST", "/api/runs/run_nope/cancel", { token: "operator", body: {} }),
      404,
      "RUN_NOT_FOUND",
    );
  });

  it("an unknown wait or effect is 404", async () => {
    const s = makeServer();
    const run = await s.start("ask", null);
    await expectError(
      s,
      s.call("POST", `/api/runs/${run.id}/waits/w9/answer`, { token: "operator", body: { value: 1 } }),
      404,
      "WAIT_NOT_FOUND",
    );
    await expectError(
      s,
      s.call("POST", `/api/runs/${run.id}/effects/e9/reconcile`, { token: "operator", body: { outcome: "applied" } }),
      404,
      "EFFECT_NOT_FOUND",
    );
  });

  it("an unknown agent or workflow is 422 and starts nothing", async () => {
    const s = makeServer();
    const agent = await expectError(
      s,
      s.call("POST", "/api/runs", { token: "operator", body: { agent: "nobody", workflow: "quick", input: 1 } }),
      422,
      "UNKNOWN_AGENT",
    );
    expect(agent.message).toContain('unknown agent "nobody" (registered: desk)');
    await expectError(
      s,
      s.call("POST", "/api/runs", { token: "operator", body: { agent: "desk", workflow: "nothing", input: 1 } }),
      422,
      "UNKNOWN_WORKFLOW",
    );
    expect(await s.runtime.listRuns()).toHaveLength(0);
  });

  it("a body over the limit is 413 BODY_TOO_LARGE, whether its length is declared or not", async () => {
    const s = makeServer({ bodyLimitBytes: 1024 });
    const run = await s.start("signal", null);
    const big = JSON.stringify({ name: "go", payload: "x".repeat(2000) });
    const error = await expectError(
      s,
      s.call("POST", `/api/runs/${run.id}/signal`, { token: "operator", raw: big }),
      413,
      "BODY_TOO_LARGE",
    );
    expect(error.details).toEqual({ limit: 1024 });
    // Streamed without Content-Length: counted as it arrives.
    const chunks = [big.slice(0, 900), big.slice(900)];
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
        controller.close();
      },
    });
    const before = await everything(s);
    const response = await s.server.app.request(`/api/runs/${run.id}/signal`, {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKENS.operator}`, "Content-Type": "application/json" },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("BODY_TOO_LARGE");
    expect(await everything(s)).toBe(before);
  });

  it("a payload over the runtime's maxPayloadBytes is 413 PAYLOAD_TOO_LARGE", async () => {
    const s = makeServer({}, { maxPayloadBytes: 100 });
    const run = await s.start("signal", null);
    const error = await expectError(
      s,
      s.call("POST", `/api/runs/${run.id}/signal`, {
        token: "operator",
        body: { name: "go", payload: "y".repeat(200) },
      }),
      413,
      "PAYLOAD_TOO_LARGE",
    );
    expect(error.details).toMatchObject({ limit: 100 });
  });

  it("a signal to a finished run is 409 RUN_NOT_OPEN", async () => {
    const s = makeServer();
    const run = await s.start("quick", 1, "COMPLETED");
    const error = await expectError(
      s,
      s.call("POST", `/api/runs/${run.id}/signal`, { token: "operator", body: { name: "go", payload: 1 } }),
      409,
      "RUN_NOT_OPEN",
    );
    expect(error.message).toContain("COMPLETED");
  });

  it("acts a run's state does not take are 409", async () => {
    const s = makeServer();
    const paused = await s.start("ask", null);
    await expectError(
      s,
      s.call("POST", `/api/runs/${paused.id}/accept`, { token: "operator", body: {} }),
      409,
      "RUN_NOT_COMPLETED",
    );
    await expectError(
      s,
      s.call("POST", `/api/runs/${paused.id}/resume`, { token: "operator", body: {} }),
      409,
      "RUN_NOT_RESUMABLE",
    );
    const done = await s.start("quick", 1, "COMPLETED");
    await expectError(
      s,
      s.call("POST", `/api/runs/${done.id}/cancel`, { token: "operator", body: {} }),
      409,
      "RUN_NOT_OPEN",
    );
  });

  it("a body that is not JSON by its Content-Type is 415", async () => {
    const s = makeServer();
    await expectError(
      s,
      s.call("POST", "/api/runs", {
        token: "operator",
        raw: "agent=desk",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
      }),
      415,
      "UNSUPPORTED_MEDIA_TYPE",
    );
  });

  it("an unknown route is 404 NOT_FOUND", async () => {
    const s = makeServer();
    await expectError(s, s.call("GET", "/api/runz", { token: "viewer" }), 404, "NOT_FOUND");
    await expectError(s, s.call("DELETE", "/api/runs", { token: "admin" }), 404, "NOT_FOUND");
    await expectError(s, s.call("GET", "/elsewhere"), 404, "NOT_FOUND");
  });

  it("storage failures are 503 STORAGE; anything unexpected is 500 INTERNAL and says no more", async () => {
    const s = makeServer();
    const run = await s.start("quick", 1, "COMPLETED");
    s.runtime.backend.listTransitions = async () => {
      throw new StorageError("database at db.internal:5432 is not answering");
    };
    // (Nothing to compare before and after: reading is what fails.)
    const storage = await s.call("GET", `/api/runs/${run.id}/transitions`, { token: "viewer" });
    expect(storage).toMatchObject({ status: 503, body: { error: { code: "STORAGE" } } });
    s.runtime.backend.loadSteps = async () => {
      throw new Error("disk on fire at /secret/path");
    };
    const internal = await s.call("GET", `/api/runs/${run.id}/steps`, { token: "viewer" });
    expect(internal).toMatchObject({ status: 500, body: { error: { code: "INTERNAL" } } });
    expect(internal.body.error.message).not.toContain("secret");
  });

  it("maps every code in one table", () => {
    expect(ERROR_STATUS.RUN_NOT_FOUND).toBe(404);
    expect(ERROR_STATUS.UNKNOWN_AGENT).toBe(422);
    expect(ERROR_STATUS.BODY_TOO_LARGE).toBe(413);
    expect(errorResponse(new Error("x")).status).toBe(500);
  });
});
