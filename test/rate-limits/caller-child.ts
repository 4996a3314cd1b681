/**
 * A caller process of the shared rate limit test: takes slots of the limit "api" (20 per second)
 * on a PostgreSQL schema, 4 callers at once, from `<startAt>` (epoch ms) for `<durationMs>`, then
 * prints `calls [<epoch ms of each call>, …]` and exits.
 *
 *   node --import tsx test/rate-limits/caller-child.ts <url> <schema> <startAt> <durationMs>
 */
import { SharedRateLimiter } from "../../src/index.ts";
import { PostgresBackend } from "../../src/postgres.ts";

const [url, schema, startText, durationText] = process.argv.slice(2);
const backend = new PostgresBackend({ connectionString: String(url), schema: String(schema), max: 4 });
await backend.init();
const limiter = new SharedRateLimiter(backend, { api: { limit: 20, periodMs: 1000 } });
const startAt = Number(startText);
const endAt = startAt + Number(durationText);
await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt - Date.now())));
const calls: number[] = [];
await Promise.all(
  Array.from({ length: 4 }, async () => {
    for (;;) {
      await limiter.take("api");
      const at = Date.now();
      if (at >= endAt) return;
      calls.push(at);
    }
  }),
);
process.stdout.write(`calls ${JSON.stringify(calls)}\n`);
await backend.close();
