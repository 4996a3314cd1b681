/**
 * A worker process of the shared rate limit test: a runtime on a PostgreSQL schema whose tool
 * "call" is under the runtime's declared limit "api" (20 per second). Prints `ready` once its
 * worker runs, reads the start time (epoch ms) from its stdin, then at that time starts 4 runs
 * that call the tool again and again until `<durationMs>` has passed, and prints
 * `calls [<epoch ms of each call before the end>, …]` (the calls of the runs it started, whichever
 * worker process ran them).
 *
 *   node --import tsx test/rate-limits/declared-child.ts <url> <schema> <durationMs>
 */
import { createInterface } from "node:readline";
import { defineAgent, defineTool, Runtime } from "../../src/index.ts";
import { PostgresBackend } from "../../src/postgres.ts";

const [url, schema, durationText] = process.argv.slice(2);
const backend = new PostgresBackend({ connectionString: String(url), schema: String(schema), max: 4 });
const caller = defineAgent({
  name: "caller",
  tools: { call: defineTool({ rateLimit: "api", run: () => Date.now() }) },
  workflows: {
    async loop(ctx, input: { endAt: number }) {
      const calls: number[] = [];
      for (;;) {
        const at = await ctx.tool("call", {});
        if (at >= input.endAt) return calls;
        calls.push(at);
      }
    },
  },
});
const runtime = new Runtime({
  agents: [caller],
  backend,
  rateLimits: { api: { limit: 20, per: "1s" } },
  worker: { concurrency: 4, pollIntervalMs: 50 },
});
await runtime.start();
process.stdout.write("ready\n");
const lines = createInterface({ input: process.stdin });
const startAt = Number(await new Promise<string>((resolve) => lines.once("line", resolve)));
lines.close();
await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt - Date.now())));
const endAt = startAt + Number(durationText);
const handles = await Promise.all(Array.from({ length: 4 }, () => runtime.run(caller, "loop", { endAt })));
const calls = (await Promise.all(handles.map((h) => h.result({ timeoutMs: 60_000 })))).flat();
process.stdout.write(`calls ${JSON.stringify(calls)}\n`);
await runtime.shutdown();
