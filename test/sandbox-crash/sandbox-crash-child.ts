/**
 * A child process for the sandbox crash test: a workflow that makes a sandbox, writes a file and
 * runs a command in it, on a SQLite file, with the local or the bubblewrap provider.
 *
 *   node --import tsx test/sandbox-crash/sandbox-crash-child.ts <db> <dir> <local|bubblewrap> <marker> start|resume
 *
 * The command counts its runs in the workspace: the first sleeps (`sleep <marker>`, the test
 * SIGKILLs this process meanwhile), a later one prints "again" and exits. `start` starts the run;
 * `resume` starts a worker that notices the dead process, recovers the run and drives it to its
 * end, then prints `{"runId", "state", "output"}` as JSON.
 */
import { join } from "node:path";
import { defineAgent, Runtime, silentLogger } from "../../src/index.ts";
import { BubblewrapProvider, LocalSandboxProvider } from "../../src/sandbox.ts";
import { SqliteBackend } from "../../src/sqlite.ts";

const [db, dir, kind, marker, mode] = process.argv.slice(2);
if (!db || !dir || !marker || (kind !== "local" && kind !== "bubblewrap") || (mode !== "start" && mode !== "resume")) {
  console.error("usage: sandbox-crash-child.ts <db> <dir> local|bubblewrap <marker> start|resume");
  process.exit(2);
}

const agent = defineAgent({
  name: "sandbox_crash",
  tools: {},
  workflows: {
    async work(ctx) {
      const box = await ctx.sandbox("work");
      await box.writeFile("a.txt", "from the first worker\n");
      const result = await box.exec(
        `cat a.txt; n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count; if [ "$n" -ge 1 ]; then echo again; exit 0; fi; sleep ${marker}`,
        { retry: { initialIntervalMs: 10 } },
      );
      return { result, info: box.info };
    },
  },
});

const boxes = join(dir, "boxes");
const options = {
  agents: [agent],
  backend: new SqliteBackend({ path: db }),
  logger: silentLogger,
  sandbox: {
    provider: kind === "local" ? new LocalSandboxProvider({ dir: boxes }) : new BubblewrapProvider({ dir: boxes }),
    logDir: join(dir, "logs"),
  },
};

if (mode === "start") {
  // A lease far longer than the test: only noticing that this process is gone can recover the run.
  const runtime = new Runtime({ ...options, worker: { leaseMs: 600_000 } });
  const run = await runtime.run(agent, "work", {}, { key: "sandbox-crash" });
  await run.result();
  console.log("the run ended before the test killed this process");
  await runtime.shutdown();
} else {
  const runtime = new Runtime({
    ...options,
    worker: { leaseMs: 1000, pollIntervalMs: 50, detectDeadLocalOwners: true },
  });
  await runtime.start();
  const [run] = await runtime.listRuns({ agent: "sandbox_crash" });
  if (!run) throw new Error("no run to resume");
  let done = await runtime.waitFor(run.id, { timeoutMs: 30_000, pollIntervalMs: 50 });
  while (done.state === "INTERRUPTED") {
    await new Promise((r) => setTimeout(r, 20));
    done = await runtime.waitFor(run.id, { timeoutMs: 30_000, pollIntervalMs: 50 });
  }
  console.log(JSON.stringify({ runId: done.id, state: done.state, output: done.output }));
  await runtime.shutdown();
}
