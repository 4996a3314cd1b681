/**
 * A worker process of the PostgreSQL restart test: a runtime with a worker (lease 2 s, polls every
 * 250 ms) on a PostgreSQL schema, running the restart agent until SIGTERM.
 *
 *   node --import tsx test/pg-restart/worker-child.ts <url> <schema> <executions>
 *
 * It prints, one line each:
 * - `ready {"workerId","pid"}` once the worker has started;
 * - `transition {"runId","id","from","to","at"}` for every transition this worker makes;
 * - `wake {"kind","runId","at"}` for every wake-up it hears (`reconnected` after the LISTEN
 *   connection came back);
 * - `saved {"runId","seq","exec"}` for every tool result in a step write that committed (the
 *   call returned), with the execution that produced it;
 * - `claim-ok {"at"}` for its first claim that succeeded, and for each one that succeeded after
 *   one failed;
 * - `warn …` / `error …`: what the runtime logs at those levels.
 *
 * It handles no `uncaughtException` or `unhandledRejection` of its own: either ends the process,
 * which the test notices.
 */
import { type LegacyLogger, Runtime } from "../../src/index.ts";
import { PostgresBackend } from "../../src/postgres.ts";
import { restartAgent } from "./restart-agent.ts";

const [url, schema, executions] = process.argv.slice(2);
if (!url || !schema || !executions) {
  console.error("usage: worker-child.ts <url> <schema> <executions>");
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

const backend = new PostgresBackend({ connectionString: url, schema, max: 8, connectTimeoutMs: 2000 });
const subscribe = backend.subscribe.bind(backend);
backend.subscribe = (listener) =>
  subscribe((wake) => {
    say(`wake ${JSON.stringify({ kind: wake.kind, runId: "runId" in wake ? wake.runId : null, at: Date.now() })}`);
    listener(wake);
  });

// What this worker saw committed: each completed tool result, with the execution that made it.
const saveSteps = backend.saveSteps.bind(backend);
backend.saveSteps = async (steps, options) => {
  await saveSteps(steps, options);
  for (const step of steps) {
    if (step.kind !== "tool" || step.status !== "completed") continue;
    const exec = (step.result as { exec?: string } | undefined)?.exec;
    say(`saved ${JSON.stringify({ runId: step.runId, seq: step.seq, exec })}`);
  }
};

// Whether this worker reaches the server: a line for its first claim that succeeds, and for each
// that succeeds after one failed (the server back after an outage). Claims are tried every poll.
let claimFailed = true;
const claimRuns = backend.claimRuns.bind(backend);
backend.claimRuns = async (request) => {
  try {
    const claimed = await claimRuns(request);
    if (claimFailed) say(`claim-ok ${JSON.stringify({ at: Date.now() })}`);
    claimFailed = false;
    return claimed;
  } catch (error) {
    claimFailed = true;
    throw error;
  }
};

const runtime = new Runtime({
  agents: [restartAgent(executions)],
  backend,
  logger,
  worker: { leaseMs: 2000, pollIntervalMs: 250, concurrency: 64 },
  shutdownGraceMs: 0,
});
runtime.onTransition((t) =>
  say(`transition ${JSON.stringify({ runId: t.runId, id: t.id, from: t.from, to: t.to, at: Date.now() })}`),
);
await runtime.start({ handleSignals: true });
say(`ready ${JSON.stringify({ workerId: runtime.workerId, pid: process.pid })}`);
// The worker's timers do not keep the process alive; this does, until SIGTERM.
setInterval(() => {}, 1 << 30);
