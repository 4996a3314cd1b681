import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InMemoryBackend } from "../src/backend/memory/memory-backend.ts";
import { ModelUnavailableError } from "../src/core/errors.ts";
import { PostgresBackend } from "../src/postgres.ts";
import { SharedRateLimiter } from "../src/runtime/rate-limiter.ts";
import { VirtualClock } from "../src/runtime/virtual-clock.ts";
import { startTestDatabase, type TestDatabase } from "./helpers/postgres.ts";

const CHILD = join(import.meta.dirname, "rate-limits", "declared-child.ts");

describe("shared rate limits on the virtual clock", () => {
  it("spaces calls periodMs / limit apart: 100 calls at 20 per second take 4.95 s", async () => {
    const clock = new VirtualClock();
    const start = clock.now();
    const limiter = new SharedRateLimiter(new InMemoryBackend(), { api: { limit: 20, periodMs: 1000 } }, { clock });
    const times: number[] = [];
    for (let i = 0; i < 100; i++) {
      await limiter.take("api");
      times.push(clock.now() - start);
    }
    expect(times.slice(0, 4)).toEqual([0, 50, 100, 150]);
    expect(times.at(-1)).toBe(4950);
    // In every window of one second, at most 20 calls.
    for (const t of times) expect(times.filter((u) => u >= t && u < t + 1000).length).toBeLessThanOrEqual(20);
  });

  it('takes the runtime\'s { limit, per } form too: 2 per "1m" is a call every 30 s', async () => {
    const clock = new VirtualClock();
    const limiter = new SharedRateLimiter(new InMemoryBackend(), { api: { limit: 2, per: "1m" } }, { clock });
    expect([await limiter.take("api"), await limiter.take("api"), await limiter.take("api")]).toEqual([
      0, 30_000, 30_000,
    ]);
  });

  it("holds the limit for everyone when a call is told to retry after a while (429)", async () => {
    const clock = new VirtualClock();
    const backend = new InMemoryBackend();
    const logged: string[] = [];
    const logger = { debug() {}, info: (m: string) => logged.push(m), warn: (m: string) => logged.push(m), error() {} };
    const a = new SharedRateLimiter(backend, { model: { limit: 10, periodMs: 1000 } }, { clock, logger });
    const b = new SharedRateLimiter(backend, { model: { limit: 10, periodMs: 1000 } }, { clock });
    const tooMany = new ModelUnavailableError("429", { provider: "test", status: 429, retryAfterMs: 30_000 });
    await expect(a.run("model", () => Promise.reject(tooMany))).rejects.toBe(tooMany);
    const before = clock.now();
    expect(await b.take("model")).toBe(30_000);
    expect(clock.now() - before).toBe(30_000);
    expect(logged.some((m) => m.includes('rate limit "model" held for 30000 ms'))).toBe(true);
    expect(() => new SharedRateLimiter(backend, { bad: { limit: 0, periodMs: 1000 } })).toThrow(/whole number/);
    expect(() => new SharedRateLimiter(backend, { bad: { limit: 2, per: "often" } })).toThrow(
      /rate limit "bad": rate limit `per` must be a duration/,
    );
    await expect(a.take("unknown")).rejects.toThrow(/no rate limit named "unknown"/);
  });
});

let db: TestDatabase | undefined;
beforeAll(async () => {
  db = await startTestDatabase();
}, 60_000);
afterAll(async () => {
  await db?.close();
});

describe("a declared rate limit across worker processes (PostgreSQL)", () => {
  it("holds 20 per second within 10% over 8 s with 3 worker processes running 4 runs each", async () => {
    const url = (db as TestDatabase).url;
    const schema = "rate_limits_test";
    const backend = new PostgresBackend({ connectionString: url, schema });
    await backend.init(); // the schema, before the workers race for it
    await backend.close();
    const durationMs = 8000;
    const children = [0, 1, 2].map(() =>
      spawn(process.execPath, ["--import", "tsx", CHILD, url, schema, String(durationMs)], {
        stdio: ["pipe", "pipe", "pipe"],
      }),
    );
    const outputs = children.map(
      (child) =>
        new Promise<string>((resolve, reject) => {
          let out = "";
          let err = "";
          child.stdout.on("data", (d) => (out += d));
          child.stderr.on("data", (d) => (err += d));
          child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`worker exited ${code}: ${err}`))));
        }),
    );
    // Every worker is up: they start their runs together, half a second from now.
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            let out = "";
            const onData = (d: Buffer) => {
              out += d;
              if (!out.includes("ready")) return;
              child.stdout.off("data", onData);
              resolve();
            };
            child.stdout.on("data", onData);
          }),
      ),
    );
    const startAt = Date.now() + 500;
    for (const child of children) child.stdin.end(`${startAt}\n`);
    const perProcess = (await Promise.all(outputs)).map(
      (out) => JSON.parse(/calls (.*)/.exec(out)?.[1] ?? "[]") as number[],
    );
    const calls = perProcess.flat().sort((a, b) => a - b);
    const rate = calls.length / (durationMs / 1000);
    console.log(
      `declared rate limit 20/s over ${durationMs} ms, 3 worker processes x 4 runs: ${calls.length} calls (${rate.toFixed(1)}/s; per process ${perProcess.map((p) => p.length).join(", ")})`,
    );
    expect(perProcess.every((p) => p.length > 0)).toBe(true);
    expect(rate).toBeGreaterThanOrEqual(18);
    expect(rate).toBeLessThanOrEqual(22);
  }, 90_000);
});
