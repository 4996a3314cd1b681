/**
 * The coding session from start to pull request, in one process: a demo remote and forge, a
 * runtime on SQLite, sandboxes from bubblewrap (local where it is missing), and the scripted coding
 * model (or a real one, when the environment names one: see `modelFromEnvironment`).
 *
 *   npm run example:coding-session               two turns, then the pull request
 *   npm run example:coding-session -- --delete   the deletion experiment in the second turn
 *
 * Everything lives in `.cairn/coding-session-demo` (made afresh each time); look at the run after
 * with `node bin/cairn.js show <run id> --db .cairn/coding-session-demo/cairn.db`.
 */
import { chmodSync, mkdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { modelFromEnvironment } from "../../src/ai-sdk.ts";
import { type RunRecord, Runtime, ScriptedModel, silentLogger } from "../../src/index.ts";
import type { DirectorySandbox } from "../../src/sandbox.ts";
import { SqliteBackend } from "../../src/sqlite.ts";
import { deleteBehindItsBack, sandboxPids } from "./delete-sandbox.ts";
import { startForge } from "./forge.ts";
import { createRemote, demoFiles, git } from "./git-remote.ts";
import { scriptedCoder } from "./scripted-coder.ts";
import { codingSessionAgent, defaultSandboxProvider, type SessionOutput } from "./session.ts";
import { approvePullRequest, say } from "./session-client.ts";

const { values } = parseArgs({ options: { delete: { type: "boolean", default: false } } });
const dir = resolve(".cairn/coding-session-demo");
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
// bubblewrap started by root runs commands as nobody, who must be able to enter the folder.
chmodSync(dir, 0o711);
const remote = join(dir, "remote.git");
await createRemote(remote, demoFiles({ slowTestSeconds: values.delete ? 3 : 0 }));
const forge = await startForge({ repo: remote, file: join(dir, "pulls.json") });
const sandboxes = defaultSandboxProvider(join(dir, "sandboxes"));
const agent = codingSessionAgent({ remote, forge: forge.url, dataDir: join(dir, "data"), heartbeatTimeoutMs: 5_000 });
const runtime = new Runtime({
  agents: [agent],
  backend: new SqliteBackend({ path: join(dir, "cairn.db") }),
  logger: silentLogger,
  models: {
    coder: modelFromEnvironment(
      process.env,
      () => new ScriptedModel({ name: "scripted-coder", replies: [scriptedCoder] }),
    ),
  },
  sandbox: { provider: sandboxes, logDir: join(dir, "logs") },
});
runtime.onTransition((t) =>
  console.log(`  [${t.runId}] ${t.from ?? "-"} -> ${t.to}${t.reason ? `: ${t.reason}` : ""}`),
);

console.log(`sandboxes: ${sandboxes.kind}${sandboxes.isolated ? "" : " (NOT ISOLATED)"}; forge at ${forge.url}`);
const run = await runtime.run(
  agent,
  "session",
  { session: "demo", request: "Add a titleCase function with a test" },
  { key: "demo" },
);
console.log(`session "demo" is run ${run.id}; turn 1 runs`);
await say(runtime, run.id, "m2", { text: "Now add truncate(text, max) too" });
console.log("turn 1 checkpointed; message m2 sent: turn 2 runs");
if (values.delete) await deleteMidTurn(run.id);
await say(runtime, run.id, "m3", { action: "open_pull_request" });
console.log("asked for the pull request; approving it");
await approvePullRequest(runtime, run.id);
const done: RunRecord = await runtime.waitFor(run.id);
const output = done.output as unknown as SessionOutput;
console.log(
  `\nsession ${done.state}: ${output.turns} turns, ${output.rebuilds} rebuilds, pull request #${output.pullRequest?.number}`,
);
console.log(
  `branch ${output.branch} on the remote:\n${await git(["--git-dir", remote, "log", "--oneline", `main..${output.branch}`])}`,
);
if (values.delete) {
  const steps = (await runtime.history(run.id)).steps;
  const lost = steps.find((s) => s.status === "failed" && s.name === "exec:workspace");
  const made = steps.filter((s) => s.name === "sandbox:workspace").map((s) => (s.result as { id: string }).id);
  console.log(`the lost step: #${lost?.seq} ${lost?.attempts.map((a) => a.error?.message).join(" / then: ")}`);
  console.log(`sandboxes the run made, by the same label: ${made.join(", ")}`);
}
console.log(`sandboxes left: ${(await sandboxes.list()).length}`);
await runtime.shutdown();
await forge.close();

/** The deletion experiment: once turn 2 runs its tests, the sandbox's processes and folder go. */
async function deleteMidTurn(runId: string): Promise<void> {
  for (;;) {
    const steps = (await runtime.history(runId)).steps;
    const tests = steps.filter(
      (s) => s.name === "exec:workspace" && (s.args as { command?: string }).command === "sh test.sh",
    );
    if (tests.length === 2 && tests[1]?.status === "started") break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const sandbox = (await sandboxes.find(`${runId}/workspace`)) as DirectorySandbox;
  // The step's start is recorded before its command starts: wait for the command's processes.
  while (sandboxPids(sandbox.hostWorkspace).length === 0) await new Promise((r) => setTimeout(r, 20));
  // Behind the runtime's back: every process of the sandbox killed, its folder removed.
  const killed = deleteBehindItsBack(sandbox.hostWorkspace);
  console.log(`deleted sandbox ${sandbox.info.id} in the middle of turn 2's tests (${killed.length} processes killed)`);
}
