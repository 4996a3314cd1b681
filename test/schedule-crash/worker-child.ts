/**
 * A worker process of the schedule crash test: a runtime with a worker on a PostgreSQL schema,
 * running the `ticker` agent whose schedules the test defines, until SIGTERM (or the test's
 * SIGKILL).
 *
 *   node --import tsx test/schedule-crash/worker-child.ts <url> <schema>
 *
 * Prints `ready {"pid"}` once the worker (and its schedule ticker) has started, and `warn …` /
 * `error …` for what the runtime logs at those levels.
 */
import { type LegacyLogger, Runtime } from "../../src/index.ts";
import { PostgresBackend } from "../../src/postgres.ts";
import { ticker } from "./ticker-agent.ts";

const [url, schema] = process.argv.slice(2);
if (!url || !schema) {
  console.error("usage: worker-child.ts <url> <schema>");
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
  agents: [ticker],
  backend: new PostgresBackend({ connectionString: url, schema, max: 4 }),
  logger,
  worker: { leaseMs: 1000, pollIntervalMs: 250, concurrency: 10, maxAutoRecoveries: 1000 },
  shutdownGraceMs: 0,
});
await runtime.start({ handleSignals: true });
say(`ready ${JSON.stringify({ pid: process.pid })}`);
// The worker's timers do not keep the process alive; this does, until a signal.
setInterval(() => {}, 1 << 30);
