import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reportBuilder, runtimeOptions } from "../examples/report-builder.ts";
import { PostgresBackend } from "../src/postgres.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { expenses } from "./fixtures/expense-agent.ts";
import { background, cairn, start } from "./helpers/cli.ts";
import { startTestDatabase, type TestDatabase } from "./helpers/postgres.ts";

/**
 * The `cairn` bin on PostgreSQL, run as a user runs it: real processes sharing one database
 * (embedded PostgreSQL, or CAIRN_TEST_DATABASE_URL's server; a fresh database either way).
 */
const example = "examples/report-builder.ts";

let db: TestDatabase;
let url = "";
/** A client-only runtime: it starts runs and reads them, never executes one. */
let client: Runtime | undefined;

function clientRuntime(): Runtime {
  client ??= new Runtime({
    agents: [reportBuilder],
    ...runtimeOptions,
    backend: new PostgresBackend({ connectionString: url }),
    worker: false,
  });
  return client;
}

beforeAll(async () => {
  db = await startTestDatabase();
  url = db.url;
});

afterAll(async () => {
  await client?.shutdown();
  await db?.close();
});

describe("cairn CLI on PostgreSQL", () => {
  let runId = "";
  /** A run started by a client and left PENDING: the worker test's worker picks it up. */
  let pendingId = "";
  /** A run `cairn run --detach` started: the worker test's worker picks it up too. */
  let detachedId = "";

  it("applies the migrations with `migrate`, once", async () => {
    const first = await cairn(["migrate", "--database-url", url]);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/\(schema cairn\): migrated from schema version 0 to [1-9]/);
    // The password never shows.
    expect(first.stdout).not.toContain(new URL(url).password || "\u0000");

    const again = await cairn(["migrate"], { CAIRN_DATABASE_URL: url });
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/schema version [1-9]\d*, up to date \(nothing to apply\)/);
  });

  it("runs the example agent with --database-url, printing its transitions and result", async () => {
    const r = await cairn([
      "run",
      example,
      "report_builder",
      "build",
      "--input",
      '{"quarter":"2026-Q3"}',
      "--database-url",
      url,
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    runId = /^run (run_\w+)\s+report_builder\/build\s+db postgres:\/\/\S+ \(schema cairn\)$/m.exec(r.stdout)?.[1] ?? "";
    expect(runId).not.toBe("");
    expect(r.stdout).toMatch(/#1\s+· → PENDING[\s\S]*#2\s+PENDING → RUNNING\s+worker [\s\S]*#3\s+RUNNING → COMPLETED/);
    expect(r.stdout).toContain('"summary": "2026-Q3: revenue EUR 83.9M (+2.1% on 2026-Q2)');
  });

  it("`cairn run` drives its own run only, not other runs waiting in the database", async () => {
    const waiting = await clientRuntime().run(reportBuilder, "build", { quarter: "2025-Q4" });
    pendingId = waiting.id;
    const r = await cairn(["run", example, "report_builder", "build", "--input", '{"quarter":"2026-Q2"}'], {
      CAIRN_DATABASE_URL: url,
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("RUNNING → COMPLETED");
    const left = await clientRuntime().getRun(pendingId);
    expect(left.state).toBe("PENDING");
    expect(left.leaseOwner).toBeNull();
    expect(left.lastTransitionId).toBe(1);
  });

  it("`cairn run --detach` starts a run for a worker and exits at once; again with its key, starts nothing", async () => {
    const args = ["run", example, "report_builder", "build", "--input", '{"quarter":"2023-Q4"}', "--key", "q4"];
    const first = await cairn([...args, "--detach"], { CAIRN_DATABASE_URL: url });
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    const id = /^run (run_\S+) {2}report_builder\/build {2}key q4 {2}db postgres:\/\/\S+ \(schema cairn\)$/m.exec(
      first.stdout,
    )?.[1];
    expect(id).toBeDefined();
    detachedId = id ?? "";
    expect(first.stdout).toContain("started PENDING: a `cairn worker` on this database claims it and drives it");
    expect(first.stdout).toContain(`follow it: cairn show ${detachedId} --follow`);
    // Nothing drove it: no claim, no lease, the creation its only transition.
    const left = await clientRuntime().getRun(detachedId);
    expect(left).toMatchObject({
      state: "PENDING",
      leaseOwner: null,
      lastTransitionId: 1,
      input: { quarter: "2023-Q4" },
    });

    const again = await cairn([...args, "--detach"], { CAIRN_DATABASE_URL: url });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`run ${detachedId}  report_builder/build  key q4`);
    expect(again.stdout).toContain('a run with key "q4" already exists (PENDING): nothing started');
    expect((await clientRuntime().listRuns({ limit: 100 })).filter((r) => r.key === "q4")).toHaveLength(1);
  });

  it("lists and shows that run with `runs` and `show` (CAIRN_DATABASE_URL works too)", async () => {
    const runs = await cairn(["runs", "--database-url", url]);
    expect(runs.code).toBe(0);
    expect(runs.stdout).toMatch(new RegExp(`${runId}\\s+report_builder/build\\s+COMPLETED`));

    const shown = await cairn(["show", runId], { CAIRN_DATABASE_URL: url });
    expect(shown.stderr).toBe("");
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("transitions (3)");
    expect(shown.stdout).toMatch(/3\s+\S+\s+worker \S+\s+RUNNING → COMPLETED\s+workflow returned/);
    expect(shown.stdout).toContain("steps (2)");
    expect(shown.stdout).toMatch(/2\s+tool\s+summarize\s+completed\s+1\s/);
  });

  it("refuses --db with --database-url, naming both (usage error)", async () => {
    const r = await cairn(["runs", "--db", "/tmp/never.db", "--database-url", url]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: --db and --database-url both given/);
    expect(r.stdout).toBe("");
  });

  it("says what to do about a schema with no Cairn tables, and about a URL that is not one", async () => {
    const missing = await cairn(["runs", "--database-url", url, "--schema", "not_there"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error: schema "not_there" has no Cairn tables/);
    expect(missing.stderr).toContain("cairn migrate --database-url");

    const notUrl = await cairn(["show", "run_x", "--database-url", "localhost:5432/app"]);
    expect(notUrl.code).toBe(2);
    expect(notUrl.stderr).toMatch(/^error: --database-url "localhost:5432\/app" is not a PostgreSQL URL/);
  });

  it("`cairn worker` drives a run started by a client-only runtime, then stops on SIGTERM", async () => {
    const worker = start(["worker", example, "--database-url", url, "--concurrency", "4"]);
    let out = "";
    let err = "";
    worker.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    worker.stderr?.on("data", (d: Buffer) => {
      err += d.toString();
    });
    const exited = new Promise<number | null>((resolve) => worker.on("close", (code) => resolve(code)));
    const client = clientRuntime();
    try {
      const ready = await new Promise<RegExpExecArray>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ready line in 15 s:\n${out}\n${err}`)), 15_000);
        const look = () => {
          const match =
            /^worker (\S+) ready {2}agents report_builder {2}database postgres:\/\/\S+ \(schema cairn\) {2}concurrency 4$/m.exec(
              out,
            );
          if (match) {
            clearTimeout(timer);
            resolve(match);
          }
        };
        worker.stdout?.on("data", look);
        worker.on("close", () => reject(new Error(`worker exited before it was ready:\n${out}\n${err}`)));
      });
      const workerId = ready[1];

      const handle = await client.run(reportBuilder, "build", { quarter: "2026-Q1" });
      const run = await client.waitFor(handle.id, { timeoutMs: 15_000 });
      expect(run.state).toBe("COMPLETED");
      expect(run.output).toMatchObject({ quarter: "2026-Q1", revenue: 78.5 });
      const { transitions } = await client.history(handle.id);
      expect(transitions.map((t) => t.to)).toEqual(["PENDING", "RUNNING", "COMPLETED"]);
      expect(transitions[1]?.actor).toEqual({ kind: "worker", id: workerId });
      // The run `cairn run` left alone was waiting for a worker: this one.
      const earlier = await client.waitFor(pendingId, { timeoutMs: 15_000 });
      expect(earlier.state).toBe("COMPLETED");
      expect((await client.history(pendingId)).transitions[1]?.actor.id).toBe(workerId);
      const detached = await client.waitFor(detachedId, { timeoutMs: 15_000 });
      expect(detached).toMatchObject({ state: "COMPLETED", output: { quarter: "2023-Q4" } });
      expect((await client.history(detachedId)).transitions[1]?.actor.id).toBe(workerId);

      // One line per transition the worker made, led by the time and the run id.
      await until(() => out.includes("RUNNING → COMPLETED"));
      expect(out).toMatch(
        new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3}  ${handle.id}  #2\\s+PENDING → RUNNING\\s+worker `, "m"),
      );
      expect(out).toMatch(new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3}  ${handle.id}  #3\\s+RUNNING → COMPLETED`, "m"));

      // `cairn run` beside a worker: whichever process claims the run drives it, and `run` prints
      // every transition either way (those made by the worker as it reads them back).
      const beside = await cairn(["run", example, "report_builder", "build", "--input", '{"quarter":"2024-Q2"}'], {
        CAIRN_DATABASE_URL: url,
      });
      expect(beside.code).toBe(0);
      expect(beside.stdout).toMatch(/#2\s+PENDING → RUNNING\s+worker \S+[\s\S]*#3\s+RUNNING → COMPLETED[\s\S]*result:/);

      const signalled = Date.now();
      worker.kill("SIGTERM");
      expect(await exited).toBe(143);
      expect(Date.now() - signalled).toBeLessThan(5_000);
      expect(out).toContain(`SIGTERM: stopping worker ${workerId}`);
      expect(out).toContain(`worker ${workerId} stopped (exit code 143)`);
      expect(err).toBe("");
    } finally {
      worker.kill("SIGKILL");
    }
  });

  it("answers and denies through the CLI while a `cairn worker` drives the run", async () => {
    const worker = background(["worker", "test/fixtures/expense-agent.ts", "--database-url", url]);
    const starter = new Runtime({
      agents: [expenses],
      backend: new PostgresBackend({ connectionString: url }),
      worker: false,
    });
    try {
      const handle = await starter.run(expenses, "submit", { amount: 90 });
      const pausedOn = async (reason: string) => {
        const deadline = Date.now() + 20_000;
        for (;;) {
          const run = await starter.getRun(handle.id);
          if (run.state === "PAUSED" && run.pausedReason === reason) return;
          if (Date.now() > deadline) throw new Error(`run is ${run.state} (${run.pausedReason}), not ${reason}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };
      await pausedOn("awaiting_user");
      const runs = await cairn(["runs", "--state", "paused", "--database-url", url]);
      expect(runs.stdout).toContain('↳ question "Which cost center pays for this expense?" (w1)');

      const answered = await cairn(["answer", handle.id, "w1", '"CC-7"', "--by", "bob", "--database-url", url]);
      expect(answered.stderr).toBe("");
      expect(answered.code).toBe(0);
      await pausedOn("awaiting_approval");

      const shown = await cairn(["show", handle.id], { CAIRN_DATABASE_URL: url });
      const digest = /digest\s+(sha256:[0-9a-f]{64})$/m.exec(shown.stdout)?.[1] ?? "";
      expect(shown.stdout).toContain(`cairn deny ${handle.id} w2 --by alice --digest ${digest}`);
      const denied = await cairn(
        ["deny", handle.id, "w2", "--by", "alice", "--digest", digest, "--note", "over budget"],
        {
          CAIRN_DATABASE_URL: url,
        },
      );
      expect(denied.stderr).toBe("");
      expect(denied.code).toBe(0);
      expect(denied.stdout).toContain(`denied "pay_expense" (w2) of run ${handle.id} as user alice: over budget`);

      // Not caught by the workflow: the run ends BLOCKED.
      const ended = await starter.waitFor(handle.id, { timeoutMs: 20_000 });
      expect(ended.state).toBe("BLOCKED");
      expect(ended.error?.code).toBe("APPROVAL_DENIED");
    } finally {
      await starter.shutdown();
      worker.child.kill("SIGKILL");
      await worker.exited;
    }
  });

  it("`cairn worker` without a module is a usage error", async () => {
    const r = await cairn(["worker", "--database-url", url]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: missing <module>/);
  });
});

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
