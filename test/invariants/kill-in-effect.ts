/**
 * Starts a `payer` run on a SQLite file; its effect tool SIGKILLs this process right after the
 * effect happened (CAIRN_KILL_IN_EFFECT=1), so the run is left RUNNING under this worker's lease.
 *
 *   node --import tsx test/invariants/kill-in-effect.ts <db> <dir>
 */
import { Runtime, silentLogger } from "../../src/index.ts";
import { SqliteBackend } from "../../src/sqlite.ts";
import { payAgent } from "./effect-agent.ts";

const [db, dir] = process.argv.slice(2);
if (!db || !dir) {
  console.error("usage: kill-in-effect.ts <db> <dir>");
  process.exit(2);
}
const agent = payAgent(dir);
const runtime = new Runtime({ agents: [agent], backend: new SqliteBackend({ path: db }), logger: silentLogger });
const run = await runtime.run(agent, "bill", { cents: 250 }, { key: "bill-1" });
await run.result();
console.error("unreachable: the effect should have killed this process");
process.exit(1);
