/**
 * A worker process of the PostgreSQL children chaos test: a runtime with a worker on a PostgreSQL
 * schema running the family agent (family-agent.ts), until SIGTERM (or the test's SIGKILL).
 *
 *   node --import tsx test/pg-children/family-worker.ts <url> <schema>
 *
 * It prints `ready` once the worker has started, and `warn …` / `error …` for what the runtime logs
 * at those levels.
 */
import { type LegacyLogger, Runtime } from "../../src/index.ts";
import { PostgresBackend } from "../../src/postgres.ts";
import { familyAgent } from "./family-agent.ts";

const [url, schema] = process.argv.slice(2);
if (!url || !schema) {
  console.error("usage: family-worker.ts <url> <schema>");
  process.exit(2);
}

const say = (line: string) => process.stdout.write(`${line}\n`);
const fields = (f?: Record<string, unknown>) => (f ? ` ${JSON.stringify(f)}` : "");
const logger: LegacyLogger = {
  debug() {},
  info() {},
  warn: (message, f) => say(`warn ${message}${fields(f)}`),
  error: (message, f) => say(`error ${message}${fields(f)}`),
};

const runtime = new Runtime({
  agents: [familyAgent],
  backend: new PostgresBackend({ connectionString: url, schema, max: 8 }),
  logger,
  worker: { concurrency: 50 },
});
await runtime.start({ handleSignals: true });
say("ready");
// The worker's timers do not keep the process alive; this does, until a signal.
setInterval(() => {}, 1 << 30);
