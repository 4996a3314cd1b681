/**
 * Worker A of the fencing test: starts one run of the fencing workflow and drives it with a short
 * lease, on a SQLite file or a PostgreSQL schema shared with the test.
 *
 *   node --import tsx test/fencing/fencing-child.ts sqlite <file> - <executions> <renewal|fence>
 *   node --import tsx test/fencing/fencing-child.ts postgres <url> <schema> <executions> <renewal|fence>
 *   node --import tsx test/fencing/fencing-child.ts postgres <url> <schema> <executions> transaction <idle-ms>
 *
 * It prints, one line each:
 * - `started {"runId","workerId","pid"}` once the run exists;
 * - `write {...}` for every `saveSteps` and `transition` it makes, with its epoch, the time it was
 *   made (`at`) and its outcome (`ok`, or the error's name and message);
 * - `renew {...}` when a lease renewal finds a lease lost;
 * - `warn ...` / `error ...`: what the runtime logs at those levels;
 * - `final {"state","output"}` once the run has ended (whoever ended it), then waits for a line
 *   on stdin (or stdin closing) before it shuts down and prints `exiting`.
 *
 * Mode `fence` discards what lease renewals report (the worker is never told that a lease is
 * lost), so the only thing that can stop it writing is the epoch fence on the writes themselves.
 *
 * Mode `transaction` (PostgreSQL): the process stops itself with SIGSTOP inside the transaction
 * that ends the run, right after that transaction has locked the run's row, and prints
 * `frozen {"at"}` first. The run is made a child of a run no worker takes (of an agent none
 * serves), so that its end goes through the planners' transaction: the plain end of a run without
 * a parent is one statement (`moveRuns`), which holds no lock between round trips. Its backend bounds idle gaps in transactions at `<idle-ms>`
 * (`transactionIdleTimeoutMs`; 0: no bound).
 */
import pg from "pg";
import { LeaseLostError, type LegacyLogger, Runtime, type RuntimeBackend } from "../../src/index.ts";
import { PostgresBackend } from "../../src/postgres.ts";
import { SqliteBackend } from "../../src/sqlite.ts";
import { hookQueries } from "../helpers/postgres.ts";
import { fencingAgent } from "./fencing-agent.ts";

const [kind, target, schema, executions, mode, idleMs] = process.argv.slice(2);
if (!target || !schema || !executions || (kind !== "sqlite" && kind !== "postgres")) {
  console.error("usage: fencing-child.ts sqlite|postgres <file|url> <schema|-> <executions> renewal|fence|transaction");
  process.exit(2);
}
if (mode !== "renewal" && mode !== "fence" && mode !== "transaction") throw new Error(`unknown mode ${mode}`);

const say = (line: string) => process.stdout.write(`${line}\n`);
const describe = (fields?: Record<string, unknown>) => (fields ? ` ${JSON.stringify(fields)}` : "");
const logger: LegacyLogger = {
  debug() {},
  info() {},
  warn: (message, fields) => say(`warn ${message}${describe(fields)}`),
  error: (message, fields) => say(`error ${message}${describe(fields)}`),
};

/** Set when the run's final transition is asked for, in mode `transaction`: freeze in its lock. */
let freezeInNextLock = false;

/**
 * A pool whose connections stop this process (SIGSTOP) once `freezeInNextLock` is set and a
 * statement that locks runs by id (`… FOR UPDATE`, not SKIP LOCKED) has returned: the process is
 * then inside that transaction, holding the lock.
 */
function freezingPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url });
  pool.on("error", () => {});
  hookQueries(pool, (text, result) => {
    if (!freezeInNextLock || !/\bFOR UPDATE$/.test(text.trim()) || !(result instanceof Promise)) return result;
    freezeInNextLock = false;
    return result.then((value: unknown) => {
      say(`frozen ${JSON.stringify({ at: Date.now() })}`);
      process.kill(process.pid, "SIGSTOP");
      return value;
    });
  });
  return pool;
}

/** Reports every write this worker makes and what became of it; in `fence` mode, blinds renewals. */
function watch(backend: RuntimeBackend, blindRenewals: boolean): RuntimeBackend {
  const outcome = async (entry: Record<string, unknown>, write: () => Promise<unknown>) => {
    try {
      await write();
      say(`write ${JSON.stringify({ ...entry, outcome: "ok" })}`);
    } catch (error) {
      const name = error instanceof LeaseLostError ? "LeaseLostError" : (error as Error).name;
      say(`write ${JSON.stringify({ ...entry, outcome: name, message: (error as Error).message })}`);
      throw error;
    }
  };
  const saveSteps = backend.saveSteps.bind(backend);
  backend.saveSteps = (steps, options) =>
    outcome(
      {
        op: "saveSteps",
        seqs: steps.map((s) => s.seq),
        statuses: steps.map((s) => s.status),
        epoch: options.epoch,
        at: Date.now(),
      },
      () => saveSteps(steps, options),
    );
  if (mode === "transaction") {
    const createRun = backend.createRun.bind(backend);
    backend.createRun = async (input) => {
      const parent = await createRun({ ...input, id: `${input.id}-holder`, agent: "held_by_no_worker", key: null });
      return createRun({ ...input, parentRunId: parent.run.id, parentClosePolicy: "abandon" });
    };
  }
  const transition = backend.transition.bind(backend);
  backend.transition = async (request) => {
    if (mode === "transaction" && request.to === "COMPLETED") freezeInNextLock = true;
    let result: Awaited<ReturnType<RuntimeBackend["transition"]>> | undefined;
    await outcome(
      { op: "transition", from: request.from, to: request.to, fence: request.fence, at: Date.now() },
      async () => {
        result = await transition(request);
      },
    );
    return result as Awaited<ReturnType<RuntimeBackend["transition"]>>;
  };
  const renewLeases = backend.renewLeases.bind(backend);
  backend.renewLeases = async (request) => {
    const lost = await renewLeases(request);
    if (lost.length > 0) say(`renew ${JSON.stringify({ lost, told: !blindRenewals, at: Date.now() })}`);
    return blindRenewals ? [] : lost;
  };
  return backend;
}

const backend =
  kind === "sqlite"
    ? new SqliteBackend({ path: target })
    : mode === "transaction"
      ? new PostgresBackend({ pool: freezingPool(target), schema, transactionIdleTimeoutMs: Number(idleMs) })
      : new PostgresBackend({ connectionString: target, schema });
const agent = fencingAgent(executions);
const runtime = new Runtime({
  agents: [agent],
  backend: watch(backend, mode === "fence"),
  logger,
  // Only the lease decides that this worker is gone: a frozen process still exists.
  worker: { leaseMs: 600, detectDeadLocalOwners: false },
});
await runtime.start();
const run = await runtime.run(agent, "chain", {});
say(`started ${JSON.stringify({ runId: run.id, workerId: runtime.workerId, pid: process.pid })}`);
// INTERRUPTED is terminal for waitFor; another worker's recovery moves the run on, so wait past it.
let final = await runtime.waitFor(run.id, { pollIntervalMs: 50 });
while (final.state === "INTERRUPTED") {
  await new Promise((r) => setTimeout(r, 20));
  final = await runtime.waitFor(run.id, { pollIntervalMs: 50 });
}
say(`final ${JSON.stringify({ state: final.state, output: final.output })}`);
// Stays up until the test has seen it alive after losing the run.
await new Promise<void>((resolve) => {
  process.stdin.once("data", () => resolve());
  process.stdin.once("end", () => resolve());
});
await runtime.shutdown({ graceMs: 0 });
say("exiting");
process.exit(0);
