/**
 * A child process for the money-transfer crash test. It runs (or resumes) a transfer on a SQLite
 * file against a bank that lives in the test's process, and, when asked, SIGKILLs itself at one
 * boundary of one effect step:
 *
 *   node --import tsx test/money-transfer/transfer-child.ts start --db <db> --bank <url> [--naive]
 *        --input <json> [--tool withdraw|deposit|refund --point <point>] [--lease-ms <ms>]
 *   node --import tsx test/money-transfer/transfer-child.ts resume --db <db> --bank <url> [--naive] [--how lease|pid]
 *
 * Kill points, on the journal writes of the step of `--tool` (found by the backend's `saveSteps`
 * and the steps a transition carries, as test/crash does):
 *   before-intent  its first write (the intent) is not made
 *   after-intent   the intent is committed; the tool has not run, the bank has seen nothing
 *   after-apply    the tool returned (the bank applied the operation); its result is not written
 *   after-result   the write that carries its result is committed (for the workflow's last step,
 *                  its COMPLETED transition: the run has ended)
 *
 * The first write of an effect step must be its intent (effect status "intended") on a
 * synchronous commit; if the engine writes it otherwise, the child says so on stderr and exits 3.
 *
 * On its end it prints one JSON line: `{ runId, state, output, error, steps }`, once the run is
 * in a terminal state or NEEDS_RECONCILIATION (where nothing moves it on without an operator).
 */
import { parseArgs } from "node:util";
import { moneyTransferAgent } from "../../examples/money-transfer/transfer.ts";
import type { RunRecord, StepRecord, TransitionRequest } from "../../src/index.ts";
import { Runtime, silentLogger } from "../../src/index.ts";
import { SqliteBackend } from "../../src/sqlite.ts";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    db: { type: "string" },
    bank: { type: "string" },
    naive: { type: "boolean", default: false },
    input: { type: "string" },
    tool: { type: "string" },
    point: { type: "string" },
    "lease-ms": { type: "string", default: "600000" },
    how: { type: "string", default: "pid" },
  },
});
const mode = positionals[0];
if (!values.db || !values.bank || (mode !== "start" && mode !== "resume")) {
  console.error("usage: transfer-child.ts start|resume --db <db> --bank <url> [...]");
  process.exit(2);
}

const POINTS = ["before-intent", "after-intent", "after-apply", "after-result"] as const;

class KillingBackend extends SqliteBackend {
  #seenIntent = false;

  constructor(
    path: string,
    readonly tool: string,
    readonly point: string,
  ) {
    super({ path });
  }

  override async saveSteps(steps: readonly StepRecord[], options: { epoch: number; sync: boolean }): Promise<void> {
    const here = steps.find((s) => s.kind === "tool" && s.name === this.tool);
    let intent = false;
    if (here && !this.#seenIntent) {
      this.#seenIntent = true;
      intent = true;
      if (here.effect?.status !== "intended" || !options.sync || here.status !== "started") {
        process.stderr.write(
          `ENGINE: the first write of effect step ${this.tool} is not a synchronous intent: ` +
            `${JSON.stringify({ sync: options.sync, status: here.status, effect: here.effect ?? null })}\n`,
        );
        process.exit(3);
      }
      if (this.point === "before-intent") die();
    }
    const settled = isSettled(here);
    if (settled && this.point === "after-apply") die();
    await super.saveSteps(steps, options);
    if (intent && this.point === "after-intent") die();
    if (settled && this.point === "after-result") die();
  }

  // The workflow's last result rides with its COMPLETED transition: the same points on that write.
  override async transition(request: TransitionRequest) {
    const settled = isSettled(request.steps?.find((s) => s.kind === "tool" && s.name === this.tool));
    if (settled && this.point === "after-apply") die();
    const result = await super.transition(request);
    if (settled && this.point === "after-result") die();
    return result;
  }
}

/** The write carries the step's outcome: it ended, or its effect is known applied. */
function isSettled(step: StepRecord | undefined): boolean {
  return step !== undefined && (step.status !== "started" || step.effect?.status === "applied");
}

function die(): never {
  process.kill(process.pid, "SIGKILL");
  throw new Error("unreachable: SIGKILL did not stop the process");
}

/** States in which nothing happens to the run without an outside act. */
const SETTLED = new Set(["COMPLETED", "FAILED", "BLOCKED", "CANCELLED", "COMPENSATED", "NEEDS_RECONCILIATION"]);

async function settle(runtime: Runtime, runId: string): Promise<RunRecord> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const run = await runtime.getRun(runId);
    if (SETTLED.has(run.state)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.state} after 60 s`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const agent = moneyTransferAgent({
  bank: values.bank,
  naive: values.naive,
  retry: { initialIntervalMs: 50, maximumAttempts: 5, jitter: 0 },
});

let runtime: Runtime;
let runId: string;
if (mode === "start") {
  const input = JSON.parse(values.input ?? "{}");
  let backend: SqliteBackend;
  if (values.tool) {
    if (!POINTS.includes(values.point as (typeof POINTS)[number]))
      throw new Error(`unknown kill point ${values.point}`);
    backend = new KillingBackend(values.db, values.tool, values.point ?? "");
  } else {
    backend = new SqliteBackend({ path: values.db });
  }
  runtime = new Runtime({
    agents: [agent],
    backend,
    logger: silentLogger,
    worker: { leaseMs: Number(values["lease-ms"]) },
  });
  const handle = await runtime.run(agent, "transfer", input, { key: input.transferId });
  runId = handle.id;
} else {
  // `lease`: recovered only once the dead worker's lease lapses; `pid`: its process is seen gone.
  runtime = new Runtime({
    agents: [agent],
    backend: new SqliteBackend({ path: values.db }),
    logger: silentLogger,
    worker: { leaseMs: 1000, pollIntervalMs: 50, detectDeadLocalOwners: values.how === "pid" },
  });
  await runtime.start();
  const [run] = await runtime.listRuns({ agent: agent.name });
  if (!run) throw new Error("no run to resume");
  runId = run.id;
}
const done = await settle(runtime, runId);
const steps = (await runtime.history(runId)).steps;
console.log(JSON.stringify({ runId, state: done.state, output: done.output, error: done.error ?? null, steps }));
await runtime.shutdown();
process.exit(0);
