/**
 * Starts a `stubborn_payer` run on a SQLite file and drives it in this process's worker, whose
 * cancel grace is `<graceMs>`: the effect tool applies the payment and never returns. Prints the
 * run id, then how the run settled (once a cancel from outside was carried out), and exits.
 *
 *   node --import tsx test/effect-cancel/stubborn-child.ts <db> <dir> <graceMs>
 */
import { Runtime, silentLogger } from "../../src/index.ts";
import { SqliteBackend } from "../../src/sqlite.ts";
import { stubbornPayAgent } from "./stubborn-agent.ts";

const [db, dir, grace] = process.argv.slice(2);
if (!db || !dir || !grace) {
  console.error("usage: stubborn-child.ts <db> <dir> <graceMs>");
  process.exit(2);
}
const agent = stubbornPayAgent(dir);
const runtime = new Runtime({
  agents: [agent],
  backend: new SqliteBackend({ path: db }),
  logger: silentLogger,
  worker: { pollIntervalMs: 50, cancelGraceMs: Number(grace) },
});
const run = await runtime.run(agent, "bill", { cents: 250 }, { key: "stubborn-1" });
console.log(`run ${run.id}`);
const settled = await runtime.waitFor(run.id, { timeoutMs: 60_000 });
console.log(`settled ${settled.state}`);
await runtime.shutdown({ graceMs: 0 });
process.exit(0);
