import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { InMemoryBackend } from "../src/backend/memory/memory-backend.ts";
import type { LegacyLogger, LogFields } from "../src/core/logger.ts";
import { rememberSecret } from "../src/core/redact.ts";
import { toLogger } from "../src/core/safe-logger.ts";
import { createConsoleLogger, defineAgent, defineTool, type Logger, Runtime } from "../src/index.ts";

/** A value this process knows to be secret (as `ctx.secret` makes it): no log line may hold it. */
const SECRET = "s3cr3t-value-of-the-ledger-9f2c";
/** A credential by its shape (an OpenAI key), known to nobody. */
const SHAPED = "sk-proj-abcdefghijklmnopqrstuvwxyz012345";

function ledger() {
  let calls = 0;
  return defineAgent({
    name: "ledger",
    tools: {
      post: defineTool({
        retry: { maximumAttempts: 2, initialIntervalMs: 1, jitter: 0 },
        run: async (ctx) => {
          calls++;
          ctx.log("posting", { token: SHAPED, note: `with ${SECRET}` });
          if (calls === 1) throw new Error(`the ledger refused key ${SHAPED} and ${SECRET}`);
          return "posted";
        },
      }),
    },
    workflows: {
      async go(ctx) {
        ctx.log("starting", { password: "hunter2-hunter2" });
        return ctx.tool("post", {});
      },
    },
  });
}

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.shutdown({ graceMs: 0 })));
});

async function runLedger(logger: Logger | LegacyLogger): Promise<{ runId: string }> {
  rememberSecret(SECRET);
  const runtime = new Runtime({ agents: [ledger()], backend: new InMemoryBackend(), logger });
  runtimes.push(runtime);
  const handle = await runtime.run("ledger", "go", {});
  await handle.result({ timeoutMs: 10_000 });
  const steps = (await runtime.history(handle.id)).steps;
  expect(steps.find((s) => s.kind === "tool")?.attempts).toHaveLength(2);
  return { runId: handle.id };
}

describe("the runtime's logger", () => {
  it("takes a pino instance as it is: JSON lines carry runId, step and worker, and no secret", async () => {
    const text: string[] = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        text.push(String(chunk));
        done();
      },
    });
    const { runId } = await runLedger(pino({ level: "debug" }, stream));
    const lines = text
      .join("")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as LogFields & { msg: string; level: number });
    const posting = lines.filter((l) => l.msg === "posting");
    expect(posting).toHaveLength(2);
    for (const line of posting) {
      expect(line).toMatchObject({ level: 30, runId, step: 1, tool: "post", token: "[REDACTED]" });
      expect(typeof line.worker).toBe("string");
      expect((line.worker as string).length).toBeGreaterThan(0);
    }
    const retry = lines.find((l) => l.msg.includes("attempt 1 failed; retrying"));
    expect(retry).toMatchObject({ runId, step: 1, worker: posting[0]?.worker });
    expect(String(retry?.error)).toContain("[REDACTED]");
    const starting = lines.find((l) => l.msg === "starting");
    expect(starting).toMatchObject({ runId, worker: posting[0]?.worker, password: "[REDACTED]" });
    const all = text.join("");
    expect(all).not.toContain(SECRET);
    expect(all).not.toContain(SHAPED);
    expect(all).not.toContain("hunter2-hunter2");
  });

  it("still takes the legacy (message, fields) shape: the fields carry the run, step and worker", async () => {
    const seen: [string, Record<string, unknown> | undefined][] = [];
    const legacy: LegacyLogger = {
      debug: () => {},
      info: (message, fields) => seen.push([message, fields]),
      warn: (message, fields) => seen.push([message, fields]),
      error: (message, fields) => seen.push([message, fields]),
    };
    const { runId } = await runLedger(legacy);
    const posting = seen.filter(([message]) => message === "posting");
    expect(posting).toHaveLength(2);
    expect(posting[0]?.[1]).toMatchObject({ runId, step: 1, token: "[REDACTED]" });
    expect(typeof posting[0]?.[1]?.worker).toBe("string");
    expect(JSON.stringify(seen)).not.toContain(SECRET);
  });
});

describe("createConsoleLogger", () => {
  it("writes pino's JSON line: level number, time, bindings and fields, msg; drops lines below its level", () => {
    const lines: string[] = [];
    const logger = createConsoleLogger({ level: "info", format: "json", write: (l) => lines.push(l), now: () => 5 });
    const run = logger.child({ worker: "w-1" }).child({ runId: "r-1" });
    run.debug({ step: 1 }, "dropped");
    run.info({ step: 2 }, "kept");
    run.error("plain message");
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      { level: 30, time: 5, worker: "w-1", runId: "r-1", step: 2, msg: "kept" },
      { level: 50, time: 5, worker: "w-1", runId: "r-1", msg: "plain message" },
    ]);
  });

  it("writes pretty lines: time, level, message, then key=value fields", () => {
    const lines: string[] = [];
    const logger = createConsoleLogger({ level: "trace", format: "pretty", write: (l) => lines.push(l), now: () => 0 });
    logger.child({ runId: "r-1" }).warn({ step: 3, note: "two words" }, "lease ran low");
    logger.trace("fine grained");
    expect(lines).toEqual([
      '00:00:00.000 WARN  lease ran low  runId=r-1  step=3  note="two words"',
      "00:00:00.000 TRACE fine grained",
    ]);
  });

  it("behind the runtime's layer, prints no credential from a message, a field, a binding or an error", () => {
    const lines: string[] = [];
    const logger = toLogger(createConsoleLogger({ level: "debug", format: "json", write: (l) => lines.push(l) }));
    rememberSecret(SECRET);
    logger
      .child({ apiKey: SHAPED })
      .warn({ error: new Error(`refused ${SECRET}`), url: "postgres://u:pw-of-db-123@host/db" }, `key ${SHAPED}`);
    const line = JSON.parse(lines[0] ?? "{}") as Record<string, unknown>;
    expect(line).toMatchObject({ apiKey: "[REDACTED]", msg: "key [REDACTED]", level: 40 });
    expect(line.error).toMatchObject({ type: "Error", message: "refused [REDACTED]" });
    expect(lines.join("")).not.toMatch(/s3cr3t|sk-proj|pw-of-db/);
  });
});

describe("the runtime's logging layer", () => {
  it("writes a line whose fields cannot be walked (a cycle) without them, rather than throwing", () => {
    const lines: string[] = [];
    const logger = toLogger(createConsoleLogger({ level: "info", format: "json", write: (l) => lines.push(l) }));
    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    expect(() => logger.info({ cyclic }, "a cyclic field")).not.toThrow();
    expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({ msg: "a cyclic field", fieldsDropped: expect.any(String) });
  });
});
