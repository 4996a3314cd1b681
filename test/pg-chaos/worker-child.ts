/**
 * A worker process of the PostgreSQL chaos test: a runtime with a worker on a PostgreSQL schema
 * running the money_transfer agent (examples/money-transfer) against the bank at `<bankUrl>`,
 * until SIGTERM (or the test's SIGKILL).
 *
 *   MONEY_DEMO_DELAY_MS=<ms> node --import tsx test/pg-chaos/worker-child.ts <url> <schema> <bankUrl>
 *
 * Lease 1 s (renewed every 333 ms), polls every 250 ms, finds a dead local owner at once
 * (`detectDeadLocalOwners`, the default), recovers a run automatically up to 1000 times (a run may
 * be cut off by many kills), and retries the bank's tools quickly with the same key. If the server
 * is down when it starts (a restart of a killed worker during the outage), it tries again.
 *
 * It prints, one line each:
 * - `ready {"workerId","pid"}` once the worker has started;
 * - `transition {"runId","id","from","to","at"}` for every transition this worker makes;
 * - `warn …` / `error …`: what the runtime logs at those levels (a server restart makes some).
 */
import { moneyTransferAgent } from "../../examples/money-transfer/transfer.ts";
import { type LegacyLogger, Runtime } from "../../src/index.ts";
import { PostgresBackend } from "../../src/postgres.ts";

const [url, schema, bankUrl] = process.argv.slice(2);
if (!url || !schema || !bankUrl) {
  console.error("usage: worker-child.ts <url> <schema> <bankUrl>");
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

const agent = moneyTransferAgent({
  bank: bankUrl,
  // Attempts cut off by kills count against the attempts: room for many.
  retry: { initialIntervalMs: 100, backoffCoefficient: 1.5, maximumIntervalMs: 1000, maximumAttempts: 50 },
});

for (;;) {
  const runtime = new Runtime({
    agents: [agent],
    backend: new PostgresBackend({ connectionString: url, schema, max: 6, connectTimeoutMs: 2000 }),
    logger,
    worker: { leaseMs: 1000, pollIntervalMs: 250, concurrency: 10, maxAutoRecoveries: 1000 },
    shutdownGraceMs: 0,
  });
  runtime.onTransition((t) =>
    say(`transition ${JSON.stringify({ runId: t.runId, id: t.id, from: t.from, to: t.to, at: Date.now() })}`),
  );
  try {
    await runtime.start({ handleSignals: true });
  } catch (error) {
    say(`warn start failed, trying again: ${String(error).split("\n")[0]}`);
    await runtime.shutdown().catch(() => {});
    await new Promise((r) => setTimeout(r, 250));
    continue;
  }
  say(`ready ${JSON.stringify({ workerId: runtime.workerId, pid: process.pid })}`);
  break;
}
// The worker's timers do not keep the process alive; this does, until a signal.
setInterval(() => {}, 1 << 30);
