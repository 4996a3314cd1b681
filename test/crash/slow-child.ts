/**
 * A child process for the shutdown and two-process tests, on a shared SQLite file:
 *
 *   node --import tsx test/crash/slow-child.ts <db> <countDir> start <graceMs>   start a run, handle SIGTERM
 *   node --import tsx test/crash/slow-child.ts <db> <countDir> worker any        a worker that exits when a run has ended
 *
 * `start` prints `started <runId>` and waits for the result; `worker` prints the final run as JSON.
 */
import { Runtime, silentLogger } from "../../src/index.ts";
import { SqliteBackend } from "../../src/sqlite.ts";
import { slowAgent } from "./slow-agent.ts";

const [db, countDir, mode, arg] = process.argv.slice(2);
if (!db || !countDir || !arg) throw new Error("usage: slow-child.ts <db> <countDir> start <graceMs> | worker any");
const agent = slowAgent(countDir, 250);

if (mode === "start") {
  const runtime = new Runtime({
    agents: [agent],
    backend: new SqliteBackend({ path: db }),
    logger: silentLogger,
    shutdownGraceMs: Number(arg),
    worker: { leaseMs: 2000 },
  });
  await runtime.start({ handleSignals: true });
  const run = await runtime.run(agent, "sum", { start: 100 });
  console.log(`started ${run.id}`);
  const final = await runtime.waitFor(run.id);
  console.log(JSON.stringify(final));
  await runtime.shutdown();
} else {
  const runtime = new Runtime({
    agents: [agent],
    backend: new SqliteBackend({ path: db }),
    logger: silentLogger,
    worker: { leaseMs: 2000, pollIntervalMs: 50 },
  });
  await runtime.start({ handleSignals: true });
  console.log("ready");
  for (;;) {
    const [run] = await runtime.listRuns({ agent: "slow_agent", state: ["COMPLETED", "FAILED"] });
    if (run) {
      console.log(JSON.stringify(run));
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  await runtime.shutdown();
}
