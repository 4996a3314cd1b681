/**
 * A child process for the chaos test: starts (or, when the run exists, lets its worker recover)
 * the chaos run of one seed on a SQLite file, prints `ready` once its runtime is up and the
 * final run as JSON when it ends.
 *
 *   node --import tsx test/chaos/chaos-child.ts <db> <dir> <seed>
 */
import { Runtime, silentLogger } from "../../src/index.ts";
import { SqliteBackend } from "../../src/sqlite.ts";
import { chaosAgent } from "./chaos-agent.ts";

const [db, dir, seedText] = process.argv.slice(2);
if (!db || !dir || !seedText) throw new Error("usage: chaos-child.ts <db> <dir> <seed>");
const agent = chaosAgent(dir);
const runtime = new Runtime({
  agents: [agent],
  backend: new SqliteBackend({ path: db }),
  logger: silentLogger,
  // Every kill is a crash the worker must recover from on its own.
  worker: { pollIntervalMs: 20, maxAutoRecoveries: 100 },
});
await runtime.start();
const handle = await runtime.run(agent, "run", { seed: Number(seedText) }, { key: `chaos-${seedText}` });
console.log("ready");
let run = await runtime.waitFor(handle.id, { pollIntervalMs: 20 });
while (run.state === "INTERRUPTED") {
  await new Promise((r) => setTimeout(r, 20));
  run = await runtime.waitFor(handle.id, { pollIntervalMs: 20 });
}
console.log(JSON.stringify(run));
await runtime.shutdown();
