/**
 * A child process for the crash test of SQLite's group commit:
 *
 *   node --import tsx test/group-crash/group-crash-child.ts <db> <dir> start <runs> <steps> <killAt>
 *   node --import tsx test/group-crash/group-crash-child.ts <db> <dir> resume
 *
 * `start` runs `runs` runs of `steps` tool steps at once on one SQLite file, so that their step
 * writes share group commits, and SIGKILLs itself inside a shared transaction: in a trigger on the
 * `steps` table (a TEMP trigger on its own connection, calling a function of this process), at
 * the `killAt`-th step write or later, once the transaction under way has written steps of at
 * least two runs. It writes `killed` (how many runs' steps that transaction held) just before.
 * Each tool returns a value no other execution returns and logs its execution in `calls-<pid>`
 * with the previous step's value, which it is given: a step runs only once the result before it
 * is durable, so every value a line there passes on must be the one its run ends with.
 * `resume` finishes every run in a fresh process and prints `{ runId: output }` as JSON.
 */
import { randomUUID } from "node:crypto";
import { appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { defineAgent, defineTool, Runtime, silentLogger } from "../../src/index.ts";
import { SqliteBackend } from "../../src/sqlite.ts";

const [db, dir, mode, runsArg, stepsArg, killAtArg] = process.argv.slice(2);
if (!db || !dir || (mode !== "start" && mode !== "resume")) {
  console.error("usage: group-crash-child.ts <db> <dir> start <runs> <steps> <killAt> | resume");
  process.exit(2);
}

const agent = defineAgent({
  name: "group_crash",
  tools: {
    unique: defineTool({
      run: (_ctx, { run, i, prev }: { run: string; i: number; prev: string }) => {
        appendFileSync(join(dir, `calls-${process.pid}`), `${run} ${i} ${prev}\n`);
        return `${process.pid}:${randomUUID()}`;
      },
    }),
  },
  workflows: {
    async chain(ctx, { steps }: { steps: number }) {
      const values: string[] = [];
      for (let i = 0; i < steps; i++) {
        values.push(await ctx.tool("unique", { run: ctx.runId, i, prev: values.at(-1) ?? "-" }));
      }
      return values;
    },
  },
});

/** The connection the backend opens, caught as it sets its first pragma; and each transaction's runs. */
let connection: Database.Database | undefined;
let runsInTransaction = new Set<string>();

function armKill(killAt: number): void {
  const proto = Database.prototype as unknown as Record<string, unknown>;
  const pragma = proto.pragma as (this: Database.Database, ...args: unknown[]) => unknown;
  proto.pragma = function (this: Database.Database, ...args: unknown[]) {
    connection ??= this;
    return pragma.apply(this, args);
  };
  const transaction = proto.transaction as (this: Database.Database, fn: unknown) => Database.Transaction;
  proto.transaction = function (this: Database.Database, fn: unknown) {
    const tx = transaction.call(this, fn);
    // Its properties are read-only: a copy whose `immediate` notes that an outermost transaction
    // begins (it has written no run's steps yet).
    return Object.assign((...args: unknown[]) => tx(...args), {
      default: tx.default,
      deferred: tx.deferred,
      exclusive: tx.exclusive,
      immediate: (...args: unknown[]) => {
        if (!this.inTransaction) runsInTransaction = new Set();
        return tx.immediate(...args);
      },
    });
  };
  let writes = 0;
  afterOpen = (c) => {
    c.function("group_crash_tick", (runId: unknown) => {
      runsInTransaction.add(String(runId));
      writes++;
      if (writes >= killAt && c.inTransaction && runsInTransaction.size >= 2) {
        writeFileSync(join(dir as string, "killed"), String(runsInTransaction.size));
        process.kill(process.pid, "SIGKILL");
      }
      return null;
    });
    for (const event of ["INSERT", "UPDATE"]) {
      c.exec(`CREATE TEMP TRIGGER group_crash_${event} AFTER ${event} ON main.steps
              BEGIN SELECT group_crash_tick(NEW.run_id); END`);
    }
  };
}
let afterOpen: ((c: Database.Database) => void) | undefined;

if (mode === "start") {
  armKill(Number(killAtArg));
  const runtime = new Runtime({ agents: [agent], backend: new SqliteBackend({ path: db }), logger: silentLogger });
  await runtime.start();
  if (!connection) throw new Error("the backend's connection was not caught");
  afterOpen?.(connection);
  const handles = await Promise.all(
    Array.from({ length: Number(runsArg) }, () => runtime.run(agent, "chain", { steps: Number(stepsArg) })),
  );
  await Promise.all(handles.map((h) => h.result()));
  console.log("finished without being killed");
  await runtime.shutdown();
} else {
  const runtime = new Runtime({
    agents: [agent],
    backend: new SqliteBackend({ path: db }),
    logger: silentLogger,
    worker: { leaseMs: 1000, pollIntervalMs: 50, detectDeadLocalOwners: true, concurrency: 50 },
  });
  await runtime.start();
  const outputs: Record<string, unknown> = {};
  for (const run of await runtime.listRuns({ agent: "group_crash" })) {
    let done = await runtime.waitFor(run.id, { timeoutMs: 30_000, pollIntervalMs: 50 });
    while (done.state === "INTERRUPTED") {
      await new Promise((r) => setTimeout(r, 20));
      done = await runtime.waitFor(run.id, { timeoutMs: 30_000, pollIntervalMs: 50 });
    }
    outputs[run.id] = { state: done.state, output: done.output };
  }
  console.log(JSON.stringify(outputs));
  await runtime.shutdown();
}
