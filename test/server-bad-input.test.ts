import { describe, expect, it } from "vitest";
import { silentLogger } from "../src/core/logger.ts";
import type { Runtime } from "../src/runtime/runtime.ts";
import { createServer } from "../src/server/app.ts";
import { forEachBackend } from "./helpers/backends.ts";
import { untilState } from "./helpers/runtime-helpers.ts";
import { desk, TOKEN_CONFIGS, TOKENS } from "./helpers/server-fixtures.ts";

/**
 * The HTTP bad-input table (issue 21): every input below gets its clear 4xx at the boundary, with
 * its code, and nothing is written — the database (every run with its transitions, steps, waits
 * and signals) is the same after each request as before. On every backend (`CAIRN_TEST_BACKENDS`
 * narrows them), against a server whose runs wait for a signal, an answer and an approval.
 */

/** One bad request: its method, path (`{signal}`, `{ask}`, `{pay}` name the waiting runs) and raw body. */
interface Row {
  what: string;
  method: "GET" | "POST";
  path: string;
  body?: string | Uint8Array;
  /** Whose token (null: none). @default "operator" */
  token?: keyof typeof TOKENS | null;
  headers?: Record<string, string>;
  status: number;
  code: string;
  /** A piece of the message: it names the field or the path. */
  says?: string | RegExp;
}

const start = (fields: string) => `{"agent":"desk","workflow":"quick","input":1${fields ? `,${fields}` : ""}}`;
const deep = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

const ROWS: Row[] = [
  // Numbers JSON.parse would change.
  {
    what: "1e309 in an input",
    method: "POST",
    path: "/api/runs",
    body: '{"agent":"desk","workflow":"quick","input":{"a":1e309}}',
    status: 400,
    code: "INVALID_INPUT",
    says: "input.a: the number 1e309",
  },
  {
    what: "1e309 in meta",
    method: "POST",
    path: "/api/runs",
    body: start('"meta":{"x":[1e309]}'),
    status: 400,
    code: "INVALID_INPUT",
    says: "meta.x.0",
  },
  {
    what: "-1e309 in a signal's payload",
    method: "POST",
    path: "/api/runs/{signal}/signal",
    body: '{"name":"go","payload":{"x":-1e309}}',
    status: 400,
    code: "INVALID_INPUT",
    says: "payload.x",
  },
  {
    what: "1e309 in a budget",
    method: "POST",
    path: "/api/runs",
    body: start('"budget":{"steps":1e309}'),
    token: "admin",
    status: 400,
    code: "INVALID_INPUT",
    says: "budget.steps",
  },
  {
    what: "an integer past 2^53 in an input",
    method: "POST",
    path: "/api/runs",
    body: '{"agent":"desk","workflow":"quick","input":{"id":9007199254740993}}',
    status: 400,
    code: "INVALID_INPUT",
    says: "input.id: the integer 9007199254740993",
  },
  {
    what: "an integer past 2^53 in meta",
    method: "POST",
    path: "/api/runs",
    body: start('"meta":{"ids":[1,-12345678901234567891]}'),
    status: 400,
    code: "INVALID_INPUT",
    says: "meta.ids.1",
  },
  {
    what: "an integer past 2^53 in an answer",
    method: "POST",
    path: "/api/runs/{ask}/waits/{askWait}/answer",
    body: '{"value":{"n":18446744073709551615}}',
    status: 400,
    code: "INVALID_INPUT",
    says: "value.n",
  },
  // Text that no store keeps as given.
  {
    what: "a NUL in a run id (GET)",
    method: "GET",
    path: "/api/runs/a%00b",
    status: 400,
    code: "INVALID_INPUT",
    says: "id: contains a NUL",
  },
  {
    what: "a NUL in a run id (cancel)",
    method: "POST",
    path: "/api/runs/a%00b/cancel",
    body: "{}",
    status: 400,
    code: "INVALID_INPUT",
    says: "id: contains a NUL",
  },
  {
    what: "a NUL in a wait id",
    method: "POST",
    path: "/api/runs/{ask}/waits/w%001/answer",
    body: '{"value":{"n":1}}',
    status: 400,
    code: "INVALID_INPUT",
    says: "waitId",
  },
  {
    what: "a NUL in a key",
    method: "POST",
    path: "/api/runs",
    body: start('"key":"k\\u0000"'),
    status: 400,
    code: "INVALID_INPUT",
    says: "key: contains a NUL",
  },
  {
    what: "a lone surrogate in a key",
    method: "POST",
    path: "/api/runs",
    body: start('"key":"k\\ud800"'),
    status: 400,
    code: "INVALID_INPUT",
    says: "key: contains a lone UTF-16 surrogate",
  },
  {
    what: "a NUL in a signal name",
    method: "POST",
    path: "/api/runs/{signal}/signal",
    body: '{"name":"go\\u0000"}',
    status: 400,
    code: "INVALID_INPUT",
    says: "name: contains a NUL",
  },
  {
    what: "a NUL in a message id",
    method: "POST",
    path: "/api/runs/{signal}/signal",
    body: '{"name":"go","messageId":"m\\u0000"}',
    status: 400,
    code: "INVALID_INPUT",
    says: "messageId",
  },
  {
    what: "a NUL in an approval's note",
    method: "POST",
    path: "/api/runs/{pay}/approvals/{payWait}/approve",
    body: '{"digest":"d","note":"ok\\u0000"}',
    token: "alice",
    status: 400,
    code: "INVALID_INPUT",
    says: "note",
  },
  {
    what: "a NUL in a cancel reason",
    method: "POST",
    path: "/api/runs/{signal}/cancel",
    body: '{"reason":"stop\\u0000"}',
    status: 400,
    code: "INVALID_INPUT",
    says: "reason",
  },
  {
    what: "a NUL in a verdict's note",
    method: "POST",
    path: "/api/runs/{done}/accept",
    body: '{"note":"\\u0000"}',
    status: 400,
    code: "INVALID_INPUT",
    says: "note",
  },
  {
    what: "a NUL in an agent filter",
    method: "GET",
    path: "/api/runs?agent=de%00sk",
    status: 400,
    code: "INVALID_INPUT",
    says: "agent",
  },
  // Names that are not own entries.
  {
    what: "a workflow named constructor",
    method: "POST",
    path: "/api/runs",
    body: '{"agent":"desk","workflow":"constructor","input":1}',
    status: 422,
    code: "UNKNOWN_WORKFLOW",
  },
  {
    what: "a workflow named toString",
    method: "POST",
    path: "/api/runs",
    body: '{"agent":"desk","workflow":"toString","input":1}',
    status: 422,
    code: "UNKNOWN_WORKFLOW",
  },
  {
    what: "a workflow named __proto__",
    method: "POST",
    path: "/api/runs",
    body: '{"agent":"desk","workflow":"__proto__","input":1}',
    status: 422,
    code: "UNKNOWN_WORKFLOW",
  },
  {
    what: "an agent named constructor",
    method: "POST",
    path: "/api/runs",
    body: '{"agent":"constructor","workflow":"quick","input":1}',
    status: 422,
    code: "UNKNOWN_AGENT",
  },
  // Depth.
  {
    what: "meta nested 100,000 deep",
    method: "POST",
    path: "/api/runs",
    body: start(`"meta":{"a":${deep(100_000)}}`),
    status: 400,
    code: "INVALID_INPUT",
    says: "more than 512 levels",
  },
  {
    what: "an input nested 600 deep",
    method: "POST",
    path: "/api/runs",
    body: `{"agent":"desk","workflow":"quick","input":${deep(600)}}`,
    status: 400,
    code: "INVALID_INPUT",
    says: "input.0.0",
  },
  {
    what: "a signal's payload nested 100,000 deep",
    method: "POST",
    path: "/api/runs/{signal}/signal",
    body: `{"name":"go","payload":${deep(100_000)}}`,
    status: 400,
    code: "INVALID_INPUT",
  },
  // The list's query.
  { what: "limit=-1", method: "GET", path: "/api/runs?limit=-1", status: 400, code: "INVALID_INPUT", says: "limit" },
  { what: "limit=0", method: "GET", path: "/api/runs?limit=0", status: 400, code: "INVALID_INPUT", says: "limit" },
  { what: "limit=201", method: "GET", path: "/api/runs?limit=201", status: 400, code: "INVALID_INPUT", says: "limit" },
  { what: "limit=1.5", method: "GET", path: "/api/runs?limit=1.5", status: 400, code: "INVALID_INPUT", says: "limit" },
  { what: "limit=ten", method: "GET", path: "/api/runs?limit=ten", status: 400, code: "INVALID_INPUT", says: "limit" },
  { what: "since=-5", method: "GET", path: "/api/runs?since=-5", status: 400, code: "INVALID_INPUT", says: "since" },
  {
    what: "an unknown state",
    method: "GET",
    path: "/api/runs?state=DONE",
    status: 400,
    code: "INVALID_INPUT",
    says: "DONE",
  },
  {
    what: "a cursor the server did not give",
    method: "GET",
    path: "/api/runs?cursor=abc",
    status: 400,
    code: "INVALID_INPUT",
    says: "cursor",
  },
  // Types and shapes.
  {
    what: "a numeric key",
    method: "POST",
    path: "/api/runs",
    body: start('"key":5'),
    status: 400,
    code: "INVALID_INPUT",
    says: "key",
  },
  {
    what: "a numeric key written 5.0",
    method: "POST",
    path: "/api/runs",
    body: start('"key":5.0'),
    status: 400,
    code: "INVALID_INPUT",
    says: "key",
  },
  {
    what: "an empty key",
    method: "POST",
    path: "/api/runs",
    body: start('"key":""'),
    status: 400,
    code: "INVALID_INPUT",
    says: "key",
  },
  {
    what: "a key of 1,001 characters",
    method: "POST",
    path: "/api/runs",
    body: start(`"key":"${"k".repeat(1001)}"`),
    status: 400,
    code: "INVALID_INPUT",
    says: "key",
  },
  {
    what: "meta that is an array",
    method: "POST",
    path: "/api/runs",
    body: start('"meta":[1]'),
    status: 400,
    code: "INVALID_INPUT",
    says: "meta",
  },
  {
    what: "meta.module",
    method: "POST",
    path: "/api/runs",
    body: start('"meta":{"module":"/tmp/x.mjs"}'),
    token: "admin",
    status: 400,
    code: "INVALID_INPUT",
    says: "meta.module",
  },
  {
    what: "meta.budget with a negative count",
    method: "POST",
    path: "/api/runs",
    body: start('"meta":{"budget":{"steps":-1}}'),
    token: "admin",
    status: 400,
    code: "INVALID_INPUT",
    says: "meta.budget",
  },
  {
    what: "meta.compensate",
    method: "POST",
    path: "/api/runs",
    body: start('"meta":{"compensate":"never"}'),
    status: 400,
    code: "INVALID_INPUT",
    says: "meta.compensate",
  },
  {
    what: "a negative budget",
    method: "POST",
    path: "/api/runs",
    body: start('"budget":{"steps":-1}'),
    status: 400,
    code: "INVALID_INPUT",
    says: "budget.steps",
  },
  {
    what: "an unknown budget key",
    method: "POST",
    path: "/api/runs",
    body: start('"budget":{"dollars":1}'),
    status: 400,
    code: "INVALID_INPUT",
    says: "dollars",
  },
  {
    what: "an unknown compensation mode",
    method: "POST",
    path: "/api/runs",
    body: start('"compensate":"sometimes"'),
    token: "admin",
    status: 400,
    code: "INVALID_INPUT",
    says: "compensate",
  },
  {
    what: "a compensation mode other than the agent's, as operator",
    method: "POST",
    path: "/api/runs",
    body: start('"compensate":"on_failure"'),
    status: 403,
    code: "FORBIDDEN",
    says: "compensate",
  },
  {
    what: "an unknown field",
    method: "POST",
    path: "/api/runs",
    body: start('"parentRunId":"r1"'),
    status: 400,
    code: "INVALID_INPUT",
    says: "parentRunId",
  },
  {
    what: "who acts, in the body",
    method: "POST",
    path: "/api/runs/{signal}/cancel",
    body: '{"by":"root"}',
    status: 400,
    code: "INVALID_INPUT",
    says: "bearer token",
  },
  {
    what: "an empty agent name",
    method: "POST",
    path: "/api/runs",
    body: '{"agent":"","workflow":"quick","input":1}',
    status: 400,
    code: "INVALID_INPUT",
    says: "agent",
  },
  {
    what: "a signal without a name",
    method: "POST",
    path: "/api/runs/{signal}/signal",
    body: '{"payload":1}',
    status: 400,
    code: "INVALID_INPUT",
    says: "name",
  },
  {
    what: "an answer without a value",
    method: "POST",
    path: "/api/runs/{ask}/waits/{askWait}/answer",
    body: "{}",
    status: 400,
    code: "INVALID_INPUT",
    says: "value",
  },
  {
    what: "an answer the question's schema refuses",
    method: "POST",
    path: "/api/runs/{ask}/waits/{askWait}/answer",
    body: '{"value":{"n":0}}',
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    what: "an approval on another payload's digest",
    method: "POST",
    path: "/api/runs/{pay}/approvals/{payWait}/approve",
    body: '{"digest":"not-the-digest"}',
    token: "alice",
    status: 409,
    code: "APPROVAL_REFUSED",
  },
  {
    what: "a reconcile with an unknown outcome",
    method: "POST",
    path: "/api/runs/{signal}/effects/e1/reconcile",
    body: '{"outcome":"maybe"}',
    status: 400,
    code: "INVALID_INPUT",
    says: "outcome",
  },
  // The body itself.
  {
    what: "a body that is not JSON",
    method: "POST",
    path: "/api/runs",
    body: "{agent: desk}",
    status: 400,
    code: "MALFORMED_JSON",
  },
  {
    what: "a body that is not UTF-8",
    method: "POST",
    path: "/api/runs",
    body: new Uint8Array([0x7b, 0xff, 0x7d]),
    status: 400,
    code: "MALFORMED_JSON",
  },
  {
    what: "a body sent as text/plain",
    method: "POST",
    path: "/api/runs",
    body: start(""),
    headers: { "content-type": "text/plain" },
    status: 415,
    code: "UNSUPPORTED_MEDIA_TYPE",
  },
  {
    what: "a body past the limit",
    method: "POST",
    path: "/api/runs",
    body: start(`"meta":{"x":"${"x".repeat(1024 * 1024)}"}`),
    status: 413,
    code: "BODY_TOO_LARGE",
  },
  // Who may.
  {
    what: "a token in the URL",
    method: "GET",
    path: `/api/events?access_token=${TOKENS.admin}`,
    token: null,
    status: 401,
    code: "UNAUTHENTICATED",
    says: "access_token",
  },
  {
    what: "a viewer's start",
    method: "POST",
    path: "/api/runs",
    body: start(""),
    token: "viewer",
    status: 403,
    code: "FORBIDDEN",
  },
  {
    what: "a cross-origin page's cancel",
    method: "POST",
    path: "/api/runs/{signal}/cancel",
    body: "{}",
    headers: { origin: "http://evil.example", "sec-fetch-site": "cross-site" },
    status: 403,
    code: "CROSS_ORIGIN",
  },
];

forEachBackend((under) => {
  describe("the HTTP bad-input table", () => {
    it("answers each bad input with its status and code, and writes nothing", async () => {
      const runtime = under.runtimes.make({ agents: [desk] });
      const server = createServer(runtime, {
        agents: [desk],
        tokens: TOKEN_CONFIGS,
        logger: silentLogger,
      });
      try {
        const ids = await setUp(runtime);
        for (const row of ROWS) {
          const before = await snapshot(runtime);
          const path = row.path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? name);
          const token = row.token === null ? undefined : TOKENS[row.token ?? "operator"];
          const response = await server.app.request(path, {
            method: row.method,
            headers: {
              ...(token !== undefined && { authorization: `Bearer ${token}` }),
              ...(row.body !== undefined && { "content-type": "application/json" }),
              ...row.headers,
            },
            ...(row.body !== undefined && { body: row.body }),
          });
          const text = await response.text();
          let body: { error?: { code?: string; message?: string } } = {};
          try {
            body = JSON.parse(text);
          } catch {}
          expect
            .soft({ status: response.status, code: body.error?.code }, `${row.what}: ${text.slice(0, 300)}`)
            .toEqual({
              status: row.status,
              code: row.code,
            });
          if (row.says !== undefined) expect.soft(body.error?.message ?? "", row.what).toMatch(row.says);
          expect.soft(await snapshot(runtime), `${row.what} wrote something`).toEqual(before);
        }
      } finally {
        server.close();
      }
    }, 120_000);

    it("stores a __proto__ key and the largest exact integers as sent, and reads them back equal", async () => {
      const runtime = under.runtimes.make({ agents: [desk] });
      const server = createServer(runtime, { tokens: TOKEN_CONFIGS, logger: silentLogger });
      try {
        const ids = await setUp(runtime);
        const input = `{"__proto__":{"polluted":true},"big":${2 ** 60},"max":${Number.MAX_SAFE_INTEGER},"s":"\\u0000"}`;
        const call = (method: string, path: string, body?: string) =>
          server.app.request(path, {
            method,
            headers: { authorization: `Bearer ${TOKENS.operator}`, "content-type": "application/json" },
            ...(body !== undefined && { body }),
          });
        const started = await call(
          "POST",
          "/api/runs",
          `{"agent":"desk","workflow":"quick","input":${input},"meta":${input}}`,
        );
        expect(started.status).toBe(201);
        const { run } = (await started.json()) as { run: { id: string } };
        const signalled = await call("POST", `/api/runs/${ids.signal}/signal`, `{"name":"go","payload":${input}}`);
        expect(signalled.status).toBe(200);
        await untilState(runtime.backend, ids.signal as string, "COMPLETED");
        const read = async (id: string) => (await (await call("GET", `/api/runs/${id}`)).text()) as string;
        expect(await read(run.id)).toContain(`"input":${input}`);
        expect(await read(run.id)).toContain(`"meta":${input}`);
        expect(await read(ids.signal as string)).toContain(`"output":${input}`);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      } finally {
        server.close();
      }
    });
  });
});

/** Runs that wait for a signal, an answer and an approval, and one that completed. */
async function setUp(runtime: Runtime): Promise<Record<string, string>> {
  const signal = await runtime.run("desk", "signal", null);
  const ask = await runtime.run("desk", "ask", null);
  const pay = await runtime.run("desk", "pay", { amount: 5 });
  const done = await runtime.run("desk", "quick", 1);
  for (const [handle, state] of [
    [signal, "PAUSED"],
    [ask, "PAUSED"],
    [pay, "PAUSED"],
    [done, "COMPLETED"],
  ] as const) {
    await untilState(runtime.backend, handle.id, state);
  }
  const askWait = (await runtime.waits(ask.id)).find((w) => w.status === "open");
  const payWait = (await runtime.waits(pay.id)).find((w) => w.status === "open");
  return {
    signal: signal.id,
    ask: ask.id,
    pay: pay.id,
    done: done.id,
    askWait: askWait?.id ?? "missing",
    payWait: payWait?.id ?? "missing",
  };
}

/** Everything stored: each run with its transitions, steps, waits and signals. */
async function snapshot(runtime: Runtime): Promise<unknown> {
  const runs = await runtime.listRuns({ limit: 1000 });
  return Promise.all(
    runs.map(async (run) => ({
      ...(await runtime.history(run.id)),
      signals: await runtime.backend.listSignals(run.id),
    })),
  );
}
