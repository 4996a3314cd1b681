import { createHash, randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteBackend } from "../src/backend/sqlite/sqlite-backend.ts";
import {
  defineAgent,
  defineTool,
  InvalidDefinitionError,
  PayloadTooLargeError,
  type RunRecord,
  Runtime,
  type RuntimeOptions,
  silentLogger,
} from "../src/index.ts";
import { forEachBackend } from "./helpers/backends.ts";
import { until } from "./helpers/runtime-helpers.ts";

const LIMIT = 10_000;

/** A JSON value of at least `bytes` bytes of text, with multi-byte characters. */
function bulky(bytes: number): { rows: { i: number; text: string }[] } {
  const rows: { i: number; text: string }[] = [];
  for (let size = 0, i = 0; size < bytes; i++) {
    const row = { i, text: `row ${i}: café ✓ ${"x".repeat(40)}` };
    size += JSON.stringify(row).length;
    rows.push(row);
  }
  return { rows };
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

const runtimes: Runtime[] = [];
const files: string[] = [];

function make(options: RuntimeOptions): Runtime {
  const runtime = new Runtime({ logger: silentLogger, ...options });
  runtimes.push(runtime);
  return runtime;
}

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.shutdown({ graceMs: 0 })));
  for (const dir of files.splice(0)) rmSync(dir, { recursive: true, force: true });
});

forEachBackend((under) => {
  const { runtimes } = under;
  describe("maxPayloadBytes", () => {
    let calls = 0;
    const agent = defineAgent({
      name: "payloads",
      tools: {
        huge: defineTool({
          run: async () => {
            calls += 1;
            return bulky(LIMIT + 1);
          },
        }),
        chatty: defineTool({
          run: async (ctx) => {
            try {
              ctx.heartbeat(bulky(LIMIT + 1));
              return "accepted";
            } catch (error) {
              return (error as Error).name;
            }
          },
        }),
      },
      workflows: {
        async fetch(ctx, _input: unknown) {
          return ctx.tool("huge", {});
        },
        async beat(ctx, _input: unknown) {
          return ctx.tool("chatty", {});
        },
        async answer(_ctx, _input: unknown) {
          return bulky(LIMIT + 1);
        },
        async wait(ctx, _input: unknown) {
          return ctx.waitForSignal("go");
        },
      },
    });

    it("fails a tool whose result is too large after one attempt, with TOOL_FAILED caused by PAYLOAD_TOO_LARGE", async () => {
      calls = 0;
      const runtime = runtimes.make({ agents: [agent], maxPayloadBytes: LIMIT });
      const handle = await runtime.run(agent, "fetch", null);
      const ended = await runtime.waitFor(handle.id, { timeoutMs: 5000 });
      expect(ended.state).toBe("FAILED");
      expect(ended.error?.code).toBe("TOOL_FAILED");
      expect(ended.error?.data).toMatchObject({ tool: "huge", attempts: 1 });
      const cause = ended.error?.cause;
      expect(cause?.code).toBe("PAYLOAD_TOO_LARGE");
      expect(cause?.message).toContain(`the result of tool "huge" (run ${handle.id}, step 1)`);
      expect(cause?.message).toMatch(/is [\d.]+ KiB \(\d+ bytes\) of JSON, over the limit of 9\.8 KiB \(10000 bytes\)/);
      expect(cause?.message).toMatch(/pass a reference to it, or raise the runtime's maxPayloadBytes/);
      expect(cause?.data).toMatchObject({ limit: LIMIT });
      expect((cause?.data?.bytes as number) > LIMIT).toBe(true);
      expect(calls).toBe(1);
      const [step] = (await runtime.history(handle.id)).steps;
      expect(step).toMatchObject({ status: "failed", result: undefined });
      expect(step?.attempts).toHaveLength(1);
      expect(step?.attempts[0]?.error?.code).toBe("PAYLOAD_TOO_LARGE");
    });

    it("refuses a run input above the limit in run(), naming the input, and creates no run", async () => {
      const runtime = runtimes.make({ agents: [agent], maxPayloadBytes: LIMIT });
      const error = await runtime.run(agent, "fetch", bulky(LIMIT + 1)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PayloadTooLargeError);
      expect((error as PayloadTooLargeError).code).toBe("PAYLOAD_TOO_LARGE");
      expect((error as Error).message).toContain('the input of workflow "fetch" of agent "payloads"');
      expect((error as Error).message).toContain("10000 bytes");
      expect((error as PayloadTooLargeError).limit).toBe(LIMIT);
      expect(await runtime.listRuns()).toEqual([]);
      // An input at the limit is taken.
      const fits = await runtime.run(agent, "wait", "x".repeat(LIMIT - 2));
      expect((await runtime.getRun(fits.id)).input).toHaveLength(LIMIT - 2);
    });

    it("refuses heartbeat details, a run's output and a signal payload above the limit", async () => {
      const runtime = runtimes.make({ agents: [agent], maxPayloadBytes: LIMIT });
      const beat = await runtime.run(agent, "beat", null);
      expect(await beat.result({ timeoutMs: 5000 })).toBe("PayloadTooLargeError");

      const answer = await runtime.run(agent, "answer", null);
      const ended = await runtime.waitFor(answer.id, { timeoutMs: 5000 });
      expect(ended.state).toBe("FAILED");
      expect(ended.error?.code).toBe("PAYLOAD_TOO_LARGE");
      expect(ended.error?.message).toContain(`the output of workflow "answer" (run ${answer.id})`);

      const waiting = await runtime.run(agent, "wait", null);
      await until(async () => (await runtime.getRun(waiting.id)).state === "PAUSED");
      const refused = await runtime.signal(waiting.id, "go", bulky(LIMIT + 1)).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(PayloadTooLargeError);
      expect((refused as Error).message).toContain(`the payload of signal "go" to run ${waiting.id}`);
      expect(await runtime.backend.listSignals(waiting.id)).toEqual([]);
      await runtime.signal(waiting.id, "go", "small");
      expect(await waiting.result({ timeoutMs: 5000 })).toBe("small");
    });

    it("refuses a maxPayloadBytes that is not a whole number of bytes", () => {
      for (const maxPayloadBytes of [0, -1, 1.5, Number.NaN]) {
        expect(() => new Runtime({ agents: [agent], maxPayloadBytes, worker: false })).toThrow(InvalidDefinitionError);
      }
    });
  });
});

// SQLite only: it reads the database file itself to see the blob stored out of line.
describe("large results on SQLite", () => {
  it("completes a workflow with a 1 MB tool result and replays it after a restart with the same value", async () => {
    const dir = join(tmpdir(), "cairn-limits-tests", randomUUID());
    files.push(dir);
    const path = join(dir, "cairn.db");
    const value = bulky(1_000_000);
    const text = JSON.stringify(value);
    let calls = 0;
    const agent = defineAgent({
      name: "bulk",
      tools: {
        fetch: defineTool({
          run: async () => {
            calls += 1;
            return value;
          },
        }),
      },
      workflows: {
        async flow(ctx, _input: null) {
          const data = (await ctx.tool("fetch", {})) as typeof value;
          const go = await ctx.waitForSignal<string>("go");
          return { go, rows: data.rows.length, digest: sha256(JSON.stringify(data)) };
        },
      },
    });

    const first = make({ agents: [agent], backend: new SqliteBackend({ path }) });
    const handle = await first.run(agent, "flow", null);
    await until(async () => (await first.getRun(handle.id)).state === "PAUSED", { what: "the run to pause" });
    await first.shutdown({ graceMs: 0 });

    const raw = new Database(path, { readonly: true });
    try {
      const row = raw.prepare("SELECT result FROM steps WHERE run_id = ? AND seq = 1").get(handle.id) as {
        result: string;
      };
      expect(row.result).toBe(`{"$cairnBlob":"sha256:${sha256(text)}","bytes":${Buffer.byteLength(text)}}`);
      expect(raw.prepare("SELECT count(*) FROM blobs").pluck().get()).toBe(1);
    } finally {
      raw.close();
    }

    // A new process on the same file: the paused run is replayed when the signal comes.
    const second = make({ agents: [agent], backend: new SqliteBackend({ path }) });
    await second.start();
    await second.signal(handle.id, "go", "on");
    const ended: RunRecord = await second.waitFor(handle.id, { timeoutMs: 10_000 });
    expect(ended.state).toBe("COMPLETED");
    expect(ended.output).toEqual({ go: "on", rows: value.rows.length, digest: sha256(text) });
    expect(calls).toBe(1);
    const [step] = (await second.history(handle.id)).steps;
    expect(step?.result).toStrictEqual(value);
  });
});
