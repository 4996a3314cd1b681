/**
 * The worker process of the cross-process wake-up test: a Runtime with a worker on the SQLite file
 * `<db>`, its poll set to 30 s, so that only a wake-up can make it claim, resume or stop a run
 * within the test's time. Prints `ready` once started; runs until killed.
 *
 *   node --import tsx test/sqlite-wake/wake-worker.ts <db>
 */
import { Runtime, silentLogger } from "../../src/index.ts";
import { SqliteBackend } from "../../src/sqlite.ts";
import { wakeAgent } from "./wake-agent.ts";

const [db] = process.argv.slice(2);
if (!db) throw new Error("usage: wake-worker.ts <db>");
const runtime = new Runtime({
  agents: [wakeAgent],
  backend: new SqliteBackend({ path: db }),
  logger: silentLogger,
  worker: { pollIntervalMs: 30_000, cancelGraceMs: 100 },
});
await runtime.start();
console.log("ready");
// The worker's timers do not hold the process open (as a server's socket would): this does.
setInterval(() => {}, 60_000);
process.on("SIGTERM", () => void runtime.shutdown({ graceMs: 0 }).finally(() => process.exit(0)));
