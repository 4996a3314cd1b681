/**
 * A child process for the pause/resume crash tests, on a SQLite file shared with the test:
 *
 *   node --import tsx test/pause/pause-child.ts start <db> <countDir> <workflow> <inputJson> [exit|stay]
 *       starts a run with a worker, prints `started <runId>`, waits for the run to end (a paused
 *       run keeps the process alive until the test kills it) and prints it as JSON; then exits,
 *       or with `stay` keeps its worker running (for the run's children) until it is killed
 *   node --import tsx test/pause/pause-child.ts worker <db> <countDir> <runId>
 *       a worker that drives runs until <runId> ends (past INTERRUPTED), then prints it as JSON
 *   node --import tsx test/pause/pause-child.ts decide <db> <runId> <waitId> <approve|deny> <by> <digest>
 *       a client (no worker) that prints `ready`, approves or denies when a line comes on stdin,
 *       and prints `{"ok":true}` or `{"error","code","why"}` as JSON
 *
 * Worker runtimes use short leases and polls, and pause retries from 100 ms on.
 */
import { Runtime, silentLogger } from "../../src/index.ts";
import { SqliteBackend } from "../../src/sqlite.ts";
import { pauseAgent } from "./pause-agent.ts";

const [mode, db, ...rest] = process.argv.slice(2);
if (!db || (mode !== "start" && mode !== "worker" && mode !== "decide")) {
  console.error("usage: pause-child.ts start|worker|decide <db> ...");
  process.exit(2);
}

function workerRuntime(countDir: string): Runtime {
  return new Runtime({
    agents: [pauseAgent(countDir)],
    backend: new SqliteBackend({ path: db as string }),
    logger: silentLogger,
    retryPauseThresholdMs: 100,
    worker: { leaseMs: 1000, pollIntervalMs: 100 },
  });
}

if (mode === "start") {
  const [countDir, workflow, input, then = "exit"] = rest as [string, string, string, string?];
  const runtime = workerRuntime(countDir);
  await runtime.start();
  const run = await runtime.run("pause_agent", workflow, JSON.parse(input));
  console.log(`started ${run.id}`);
  const done = await runtime.waitFor(run.id, { pollIntervalMs: 50 });
  console.log(JSON.stringify({ runId: done.id, state: done.state, output: done.output, error: done.error }));
  if (then === "stay") setInterval(() => {}, 60_000);
  else await runtime.shutdown();
} else if (mode === "worker") {
  const [countDir, runId] = rest as [string, string];
  const runtime = workerRuntime(countDir);
  await runtime.start();
  console.log("ready");
  // INTERRUPTED is terminal for waitFor; this worker's own recovery moves the run on.
  let done = await runtime.waitFor(runId, { timeoutMs: 30_000, pollIntervalMs: 50 });
  while (done.state === "INTERRUPTED") {
    await new Promise((r) => setTimeout(r, 20));
    done = await runtime.waitFor(runId, { timeoutMs: 30_000, pollIntervalMs: 50 });
  }
  console.log(JSON.stringify({ runId: done.id, state: done.state, output: done.output, error: done.error }));
  await runtime.shutdown();
} else {
  const [runId, waitId, decision, by, digest] = rest as [string, string, string, string, string];
  const runtime = new Runtime({
    agents: [pauseAgent(".")],
    backend: new SqliteBackend({ path: db }),
    logger: silentLogger,
    worker: false,
  });
  await runtime.start();
  console.log("ready");
  await new Promise((r) => process.stdin.once("data", r));
  process.stdin.destroy();
  try {
    const options = { by, digest };
    if (decision === "approve") await runtime.approve(runId, waitId, options);
    else await runtime.deny(runId, waitId, options);
    console.log(JSON.stringify({ ok: true }));
  } catch (error) {
    const e = error as { name?: string; code?: string; why?: string; message?: string };
    console.log(JSON.stringify({ error: e.name, code: e.code, why: e.why, message: e.message }));
  }
  await runtime.shutdown();
}
