import { afterEach } from "vitest";
import { z } from "zod";
import { InMemoryBackend } from "../../src/backend/memory/memory-backend.ts";
import { silentLogger } from "../../src/core/logger.ts";
import type { RunRecord } from "../../src/core/records.ts";
import { defineAgent, defineTool } from "../../src/index.ts";
import { Runtime, type RuntimeOptions } from "../../src/runtime/runtime.ts";
import { type CairnServer, createServer, type ServerOptions } from "../../src/server/app.ts";
import type { TokenConfig } from "../../src/server/auth.ts";
import { untilState } from "./runtime-helpers.ts";

/**
 * What the server tests share: an agent that asks, asks for approvals, waits for signals and has
 * an effect of unknown outcome; tokens of each role; a server on a fresh in-memory runtime; and
 * `call`, which sends one request in-process (`app.request`) and parses the JSON answer.
 */

export const TOKENS = {
  admin: "admin-token-000000000001",
  viewer: "viewer-token-00000000001",
  operator: "operator-token-000000001",
  alice: "alice-approver-token-0001",
  bob: "bob-approver-token-000001",
} as const;

export const TOKEN_CONFIGS: TokenConfig[] = [
  { token: TOKENS.admin, subject: "root", roles: ["admin"] },
  { token: TOKENS.viewer, subject: "vera", roles: ["viewer"] },
  { token: TOKENS.operator, subject: "olga", roles: ["operator"] },
  { token: TOKENS.alice, subject: "alice", roles: ["approver"] },
  { token: TOKENS.bob, subject: "bob", roles: ["approver", "operator"] },
];

/** How many times the effect tool `push` ran. */
export const pushes = { count: 0 };

export const desk = defineAgent({
  name: "desk",
  description: "answers, approvals, signals and an effect",
  version: "3",
  tools: {
    pay: defineTool({
      approval: { expiresInMs: 60_000, approvers: ["alice"] },
      run: async (_ctx, args: { amount: number }) => ({ paid: args.amount }),
    }),
    push: defineTool({
      retry: { maximumAttempts: 1 },
      effect: {},
      run: async () => {
        pushes.count += 1;
        throw new Error("connection reset after the request was sent");
      },
    }),
  },
  workflows: {
    async ask(ctx, _input: null) {
      const answer = await ctx.askUser("how many?", { schema: z.object({ n: z.number().min(1) }) });
      return answer.n;
    },
    async pay(ctx, input: { amount: number }) {
      return ctx.tool("pay", input);
    },
    async full(ctx, _input: null) {
      const answer = await ctx.askUser("how much?", { schema: z.object({ n: z.number() }) });
      const paid = await ctx.tool("pay", { amount: answer.n });
      return { paid };
    },
    async signal(ctx, _input: null) {
      return ctx.waitForSignal<{ x: number }>("go");
    },
    async quick(_ctx, input: unknown) {
      return input;
    },
    async push(ctx, _input: null) {
      await ctx.tool("push", {});
      return "pushed";
    },
    async talk(ctx, _input: null) {
      return ctx.llm.generate({ prompt: "say hello" });
    },
  },
  inputs: { pay: z.object({ amount: z.number() }) },
});

/** A server under test. */
export interface ServerUnderTest {
  runtime: Runtime;
  server: CairnServer;
  /** One request in-process; `token` names an entry of {@link TOKENS} (none: no Authorization). */
  call(
    method: string,
    path: string,
    options?: { token?: keyof typeof TOKENS | string; body?: unknown; raw?: string; headers?: Record<string, string> },
  ): Promise<{ status: number; body: any; headers: Headers }>;
  /** Starts a run of `desk` directly on the runtime and waits until it is in `state`. */
  start(workflow: string, input: unknown, state?: RunRecord["state"]): Promise<RunRecord>;
}

const made: { runtime: Runtime; server: CairnServer }[] = [];

afterEach(async () => {
  for (const { runtime, server } of made.splice(0)) {
    server.close();
    await runtime.shutdown({ graceMs: 0 });
  }
});

/** A server (with the test tokens unless `tokens` says otherwise) on a fresh in-memory runtime. */
export function makeServer(
  options: ServerOptions = {},
  runtimeOptions: Omit<RuntimeOptions, "agents"> = {},
): ServerUnderTest {
  const runtime = new Runtime({
    agents: [desk],
    backend: new InMemoryBackend(),
    logger: silentLogger,
    ...runtimeOptions,
  });
  const server = createServer(runtime, {
    agents: [desk],
    tokens: TOKEN_CONFIGS,
    logger: silentLogger,
    pollIntervalMs: 20,
    feedPollIntervalMs: 50,
    ...options,
  });
  made.push({ runtime, server });
  return {
    runtime,
    server,
    async call(method, path, { token, body, raw, headers = {} } = {}) {
      const secret = token === undefined ? undefined : (TOKENS[token as keyof typeof TOKENS] ?? token);
      const init: RequestInit = {
        method,
        headers: {
          ...(secret !== undefined && { Authorization: `Bearer ${secret}` }),
          ...((body !== undefined || raw !== undefined) && { "Content-Type": "application/json" }),
          ...headers,
        },
        ...(raw !== undefined ? { body: raw } : body !== undefined ? { body: JSON.stringify(body) } : {}),
      };
      const response = await server.app.request(path, init);
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = text === "" ? undefined : JSON.parse(text);
      } catch {
        parsed = text;
      }
      return { status: response.status, body: parsed, headers: response.headers };
    },
    async start(workflow, input, state = "PAUSED") {
      const handle = await runtime.run("desk", workflow, input);
      return untilState(runtime.backend, handle.id, state);
    },
  };
}
