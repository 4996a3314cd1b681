/**
 * A worker process for the coding session's crash test, on a SQLite file in `<dir>`:
 *
 *   node --import tsx test/coding-session/session-child.ts <dir> <forgeUrl> <bubblewrap|local> start
 *   node --import tsx test/coding-session/session-child.ts <dir> <forgeUrl> <bubblewrap|local> finish
 *
 * `start` starts the session `crash` and works on it until it is killed (it prints `run <id>`).
 * `finish` is the new worker after the kill: it takes the run up again (the dead worker's process
 * is noticed at once), asks for the pull request, approves it, and prints the session's end as JSON.
 */
import { join } from "node:path";
import { scriptedCoder } from "../../examples/coding-session/scripted-coder.ts";
import { codingSessionAgent } from "../../examples/coding-session/session.ts";
import { Runtime, ScriptedModel, silentLogger } from "../../src/index.ts";
import { SqliteBackend } from "../../src/sqlite.ts";
import { approvePullRequest, latestRun, say } from "./driver.ts";
import { provider } from "./fixture.ts";

const [dir, forge, kind, mode] = process.argv.slice(2);
if (!dir || !forge || (kind !== "bubblewrap" && kind !== "local") || (mode !== "start" && mode !== "finish")) {
  console.error("usage: session-child.ts <dir> <forgeUrl> <bubblewrap|local> start|finish");
  process.exit(2);
}

const agent = codingSessionAgent({
  remote: join(dir, "remote.git"),
  forge,
  dataDir: join(dir, "data"),
  heartbeatTimeoutMs: 10_000,
});
const runtime = new Runtime({
  agents: [agent],
  backend: new SqliteBackend({ path: join(dir, "cairn.db") }),
  logger: silentLogger,
  models: { coder: new ScriptedModel({ name: "scripted-coder", replies: [scriptedCoder] }) },
  sandbox: { provider: provider(kind, join(dir, "sandboxes")), logDir: join(dir, "logs") },
  worker: { leaseMs: 600_000, pollIntervalMs: 50, detectDeadLocalOwners: true },
});

if (mode === "start") {
  const run = await runtime.run(
    agent,
    "session",
    { session: "crash", request: "Add a titleCase function with a test" },
    { key: "crash" },
  );
  console.log(`run ${run.id}`);
  // Works until the test kills this process.
  await new Promise(() => {});
} else {
  await runtime.start();
  const [first] = await runtime.listRuns({ agent: agent.name });
  if (!first) throw new Error("no session to finish");
  await say(runtime, first.id, "m-pr", { action: "open_pull_request" });
  await approvePullRequest(runtime, first.id);
  const last = await latestRun(runtime, first.id);
  const done = await runtime.waitFor(last.id, { timeoutMs: 60_000, pollIntervalMs: 50 });
  console.log(JSON.stringify({ runId: done.id, state: done.state, output: done.output, error: done.error }));
  await runtime.shutdown();
}
