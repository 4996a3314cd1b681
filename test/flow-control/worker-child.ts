/**
 * A worker process of the flow-control test: a runtime with a worker on a PostgreSQL schema
 * running the flow_test agent, until SIGTERM.
 *
 *   node --import tsx test/flow-control/worker-child.ts <url> <schema>
 *
 * Prints `ready {"workerId","pid"}` once the worker has started.
 */
import { Runtime, silentLogger } from "../../src/index.ts";
import { PostgresBackend } from "../../src/postgres.ts";
import { flowAgent } from "./flow-agent.ts";

const [url, schema] = process.argv.slice(2);
if (!url || !schema) {
  console.error("usage: worker-child.ts <url> <schema>");
  process.exit(2);
}

const runtime = new Runtime({
  agents: [flowAgent],
  backend: new PostgresBackend({ connectionString: url, schema, max: 6 }),
  logger: silentLogger,
  worker: { leaseMs: 5000, pollIntervalMs: 100, concurrency: 8 },
  shutdownGraceMs: 0,
});
await runtime.start({ handleSignals: true });
process.stdout.write(`ready ${JSON.stringify({ workerId: runtime.workerId, pid: process.pid })}\n`);
// The worker's timers do not keep the process alive; this does, until a signal.
setInterval(() => {}, 1 << 30);
