/**
 * A child process for the crash test. It runs (or resumes) the 10-tool crash workflow on a
 * SQLite file and, when asked, SIGKILLs itself at one step boundary:
 *
 *   node --import tsx test/crash/crash-child.ts <db> <countDir> start <point> <seq> <leaseMs>
 *   node --import tsx test/crash/crash-child.ts <db> <countDir> resume <lease|pid>
 *
 * Kill points: `before-start` (the step's start record is not written), `before-result` (the
 * tool ran, its result is not written), `after-result` (the result is committed). On a clean
 * end it prints `{"runId", "state", "output"}` as JSON.
 */
import type { StepRecord, TransitionRequest } from "../../src/index.ts";
import { Runtime, silentLogger } from "../../src/index.ts";
import { SqliteBackend } from "../../src/sqlite.ts";
import { crashAgent } from "./crash-agent.ts";

const [db, countDir, mode, a, b] = process.argv.slice(2);
if (!db || !countDir || (mode !== "start" && mode !== "resume")) {
  console.error("usage: crash-child.ts <db> <countDir> start <point> <seq> | resume <lease|pid>");
  process.exit(2);
}

class KillingBackend extends SqliteBackend {
  constructor(
    path: string,
    readonly point: string,
    readonly seq: number,
  ) {
    super({ path });
  }

  override async saveSteps(steps: readonly StepRecord[], options: { epoch: number; sync: boolean }): Promise<void> {
    const here = steps.find((s) => s.kind === "tool" && s.seq === this.seq);
    // The first write of the step is its start record (attempt 1 begun, not ended).
    const isStart = here?.status === "started" && here.attempts.length === 1 && here.attempts[0]?.endedAt === null;
    if (isStart && this.point === "before-start") die();
    if (here?.status === "completed" && this.point === "before-result") die();
    await super.saveSteps(steps, options);
    if (here?.status === "completed" && this.point === "after-result") die();
  }

  // The last tool's result rides with the run's COMPLETED transition: the same points on that write.
  override async transition(request: TransitionRequest) {
    const here = request.steps?.find((s) => s.kind === "tool" && s.seq === this.seq);
    if (here?.status === "completed" && this.point === "before-result") die();
    const result = await super.transition(request);
    if (here?.status === "completed" && this.point === "after-result") die();
    return result;
  }
}

function die(): never {
  process.kill(process.pid, "SIGKILL");
  throw new Error("unreachable: SIGKILL did not stop the process");
}

const agent = crashAgent(countDir);
if (mode === "start") {
  const backend = a === "none" ? new SqliteBackend({ path: db }) : new KillingBackend(db, a ?? "", Number(b));
  const leaseMs = Number(process.argv[7] ?? 1000);
  const runtime = new Runtime({ agents: [agent], backend, logger: silentLogger, worker: { leaseMs } });
  const run = await runtime.run(agent, "chain", { seed: "s" }, { key: "crash" });
  const output = await run.result();
  console.log(JSON.stringify({ runId: run.id, state: "COMPLETED", output }));
  await runtime.shutdown();
} else {
  // `lease`: recover only once the dead worker's lease lapses; `pid`: also notice at once that
  // its process is gone. Both are real recovery paths.
  const runtime = new Runtime({
    agents: [agent],
    backend: new SqliteBackend({ path: db }),
    logger: silentLogger,
    worker: { leaseMs: 1000, pollIntervalMs: 50, detectDeadLocalOwners: a === "pid" },
  });
  await runtime.start();
  const [run] = await runtime.listRuns({ agent: "crash_agent" });
  if (!run) throw new Error("no run to resume");
  // INTERRUPTED is terminal for waitFor; here the worker's own recovery moves it on, so wait past it.
  let done = await runtime.waitFor(run.id, { timeoutMs: 20_000, pollIntervalMs: 50 });
  while (done.state === "INTERRUPTED") {
    await new Promise((r) => setTimeout(r, 20));
    done = await runtime.waitFor(run.id, { timeoutMs: 20_000, pollIntervalMs: 50 });
  }
  console.log(JSON.stringify({ runId: done.id, state: done.state, output: done.output }));
  await runtime.shutdown();
}
