import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteBackend } from "../src/sqlite.ts";
import { background, cairn, root, start } from "./helpers/cli.ts";
import { until } from "./helpers/runtime-helpers.ts";

/** The `cairn` bin, run as a user runs it: a real process, a real SQLite file. */
const dir = mkdtempSync(join(tmpdir(), "cairn-cli-"));
const db = join(dir, "cli.db");
const example = "examples/report-builder.ts";

function runIdOf(stdout: string): string {
  const id = /^run (run_\w+)/m.exec(stdout)?.[1];
  if (!id) throw new Error(`no run id in:\n${stdout}`);
  return id;
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("cairn CLI", () => {
  let runId = "";

  it("runs the example agent, printing its transitions live and its result", async () => {
    const r = await cairn(["run", example, "report_builder", "build", "--input", '{"quarter":"2026-Q3"}', "--db", db]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    runId = runIdOf(r.stdout);
    const lines = r.stdout.split("\n");
    const pending = lines.findIndex((l) => /#1\s+· → PENDING/.test(l));
    const running = lines.findIndex((l) => /#2\s+PENDING → RUNNING\s+worker /.test(l));
    const completed = lines.findIndex((l) => /#3\s+RUNNING → COMPLETED/.test(l));
    expect(pending).toBeGreaterThan(0);
    expect(running).toBeGreaterThan(pending);
    expect(completed).toBeGreaterThan(running);
    expect(r.stdout).toContain('"summary": "2026-Q3: revenue EUR 83.9M (+2.1% on 2026-Q2)');
  });

  it("prints its version, the package's, with --version", async () => {
    const packageVersion = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version as string;
    for (const flag of ["--version", "-v", "version"]) {
      const result = await cairn([flag]);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(new RegExp(`^cairn ${packageVersion.replaceAll(".", "\\.")} \\(node `));
    }
  });

  it("lists the run with `runs`", async () => {
    const r = await cairn(["runs", "--db", db]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`${runId}\\s+report_builder/build\\s+COMPLETED`));
  });

  it("lists the runs created since a time, of one agent, with `runs --since` and `--agent`", async () => {
    const file = join(dir, "since.db");
    const backend = new SqliteBackend({ path: file });
    await backend.init();
    const now = Date.now();
    const make = async (id: string, agent: string, ago: number) =>
      backend.createRun({
        id,
        agent,
        workflow: "build",
        key: null,
        input: {},
        versions: { workflow: "v1", policy: null, runtime: "0.1.0" },
        meta: {},
        actor: { kind: "user", id: "test" },
        reason: "started by test",
        at: now - ago,
      });
    await make("run_two_days_old", "report_builder", 2 * 86_400_000);
    await make("run_two_hours_old", "report_builder", 2 * 3_600_000);
    await make("run_ten_minutes_old", "report_builder", 10 * 60_000);
    await make("run_other_agent", "other_agent", 60_000);
    await backend.close();
    const listed = (r: { stdout: string }) => [...r.stdout.matchAll(/^(run_\w+)/gm)].map((m) => m[1]);
    const hour = await cairn(["runs", "--since", "1h", "--db", file]);
    expect(hour.code).toBe(0);
    expect(listed(hour)).toEqual(["run_other_agent", "run_ten_minutes_old"]);
    const day = await cairn(["runs", "--since", "1d", "--agent", "report_builder", "--db", file]);
    expect(listed(day)).toEqual(["run_ten_minutes_old", "run_two_hours_old"]);
    const date = new Date(now - 3 * 86_400_000).toISOString();
    expect(listed(await cairn(["runs", "--since", date, "--limit", "3", "--db", file]))).toEqual([
      "run_other_agent",
      "run_ten_minutes_old",
      "run_two_hours_old",
    ]);
    const none = await cairn(["runs", "--since", "5m", "--agent", "report_builder", "--db", file]);
    expect(none.stdout).toMatch(/^no runs of agent report_builder, created since \d{4}-\d{2}-\d{2}T/m);
    const bad = await cairn(["runs", "--since", "yesterday", "--db", file]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--since "yesterday" is neither a window back from now');
  });

  it("shows the run's transitions and steps with `show`", async () => {
    const r = await cairn(["show", runId, "--db", db]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("transitions (3)");
    expect(r.stdout).toMatch(/3\s+\S+\s+worker \S+\s+RUNNING → COMPLETED\s+workflow returned/);
    expect(r.stdout).toContain("steps (2)");
    expect(r.stdout).toMatch(/1\s+tool\s+fetch_data\s+completed\s+1\s/);
    expect(r.stdout).toMatch(/2\s+tool\s+summarize\s+completed\s+1\s/);
  });

  it("runs the decorator-style agent too (CAIRN_DB instead of --db)", async () => {
    const r = await cairn(
      [
        "run",
        "examples/report-builder-decorators.ts",
        "report_builder_classic",
        "build",
        "--input",
        '{"quarter":"2026-Q3"}',
      ],
      { CAIRN_DB: db },
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/report_builder_classic\/build/);
    expect(r.stdout).toContain("RUNNING → COMPLETED");
    expect(r.stdout).toContain('"summary": "2026-Q3: revenue EUR 83.9M');
  });

  it("applies the module's runtimeOptions limits (maxSteps)", async () => {
    const r = await cairn(["run", "test/fixtures/limited-agent.ts", "limited", "five", "--db", db]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/STEP_LIMIT/);
    expect(r.stderr).toMatch(/limit of 3 steps/);
  });

  it("exits 1 with the run's error when the run fails", async () => {
    // A string, as the workflow's input schema asks, but not a quarter, as its first tool's asks.
    const r = await cairn(["run", example, "report_builder", "build", "--input", '{"quarter":"soon"}', "--db", db]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("RUNNING → FAILED");
    expect(r.stderr).toMatch(/^error: run run_\w+ ended FAILED: \[INVALID_INPUT\] invalid input for tool "fetch_data"/);
  });

  it("starts nothing when the input does not match the workflow's input schema, and says so", async () => {
    const before = await cairn(["runs", "--db", db]);
    const r = await cairn(["run", example, "report_builder", "build", "--db", db]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(
      /^error: \[INVALID_INPUT\] invalid input for workflow "build" of agent "report_builder": quarter: .*No run was started; pass an input that matches the schema in the agent's `inputs.build` \(the input was \{\}: set it with --input '<json>'\)$/m,
    );
    const ids = (out: string) => out.match(/run_\w+/g) ?? [];
    expect(ids((await cairn(["runs", "--db", db])).stdout)).toEqual(ids(before.stdout));
  });

  it("rejects --input that is not JSON, naming --input", async () => {
    const r = await cairn(["run", example, "report_builder", "build", "--input", "{quarter:", "--db", db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: --input is not valid JSON/);
    expect(r.stdout).toBe("");
  });

  it("lists the known workflows for an unknown one", async () => {
    const r = await cairn(["run", example, "report_builder", "bild", "--db", db]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error: unknown workflow "bild" in agent "report_builder" (known: build)');
  });

  it("starts a run with --detach and follows it with `show --follow` through a killed worker and the one that resumes it", async () => {
    const detached = await cairn([
      "run",
      example,
      "report_builder",
      "build",
      "--input",
      '{"quarter":"2025-Q1"}',
      "--detach",
      "--db",
      db,
    ]);
    expect(detached.code).toBe(0);
    const id = runIdOf(detached.stdout);
    expect(detached.stdout).toContain(`follow it: cairn show ${id} --follow --db ${db}`);
    const follow = background(["show", id, "--follow", "--db", db]);
    let first: ReturnType<typeof background> | undefined;
    let second: ReturnType<typeof background> | undefined;
    try {
      // The worker starts once `show` has printed the run as it is (PENDING) and follows it, so
      // that every later transition comes through the follow. Generous bounds: on a loaded CI
      // machine a fresh `cairn` process takes seconds to start.
      await until(() => follow.stdout().includes(`following ${id}`), { timeoutMs: 60_000, what: "show to follow" });
      first = background(["worker", example, "--db", db], { CAIRN_DEMO_STEP_DELAY_MS: "1500" });
      // Kill the first worker once the run's first tool is checkpointed (the second needs 1.5 s).
      await until(() => /#2\s+PENDING → RUNNING/.test(follow.stdout()), { timeoutMs: 60_000, what: "the claim" });
      const backend = new SqliteBackend({ path: db });
      await backend.init();
      try {
        await until(async () => (await backend.loadSteps(id))[0]?.status === "completed", {
          timeoutMs: 30_000,
          what: "the first tool's checkpoint",
        });
      } finally {
        await backend.close();
      }
      first.child.kill("SIGKILL");
      await first.exited;
      second = background(["worker", example, "--db", db]);
      const followed = await follow.exited;
      expect(followed.stderr).toBe("");
      expect(followed.code).toBe(0);
      const out = followed.stdout;
      expect(out).toContain(`following ${id}: its transitions and step attempts as they are recorded`);
      // Each transition once, in order, whoever recorded it.
      const order = [
        /#2\s+PENDING → RUNNING\s+worker /,
        /#3\s+RUNNING → INTERRUPTED\s+system \S+\s+worker \S+ was lost/,
        /a worker's recovery usually resumes it; else: cairn resume \S+ --db \S+ {2}\(still following\)/,
        /#4\s+INTERRUPTED → RESUMING/,
        /#5\s+RESUMING → RUNNING/,
        /#6\s+RUNNING → COMPLETED/,
        /^result:$/m,
      ].map((pattern) => out.search(pattern));
      expect(order.every((at) => at >= 0)).toBe(true);
      expect([...order].sort((a, b) => a - b)).toEqual(order);
      expect(out.match(/RUNNING → COMPLETED/g)).toHaveLength(1);
      expect(out).toContain('"summary": "2025-Q1: revenue');
      // Step attempts, read from the journal whichever worker made them: the first tool's once.
      expect(out.match(/^ {2}step 1 tool "\w+": attempt 1 completed in /gm)).toHaveLength(1);
      // The attempt the killed worker left open is closed as cut off, then run again.
      expect(out).toMatch(
        /^ {2}step \d+ tool "\w+": attempt 1 failed after .*: the process running this attempt stopped/m,
      );
      expect(out.search(/^ {2}step \d+ tool "\w+": attempt 2 completed in /m)).toBeLessThan(
        out.search(/RUNNING → COMPLETED/),
      );
    } finally {
      first?.child.kill("SIGKILL");
      follow.child.kill("SIGKILL");
      second?.child.kill("SIGTERM");
      await second?.exited;
    }
  }, 150_000);

  it("resumes a run killed halfway without running its finished step again", async () => {
    const child = start(["run", example, "report_builder", "build", "--input", '{"quarter":"2026-Q4"}', "--db", db], {
      CAIRN_DEMO_STEP_DELAY_MS: "1500",
    });
    let out = "";
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    const exited = new Promise((resolve) => child.on("close", resolve));
    const backend = new SqliteBackend({ path: db });
    await backend.init();
    let id: string | undefined;
    try {
      // Kill it as soon as the first tool's result is checkpointed (the second one needs 1.5 s). The
      // CLI's cold start (tsx loading the sources) can take seconds on a loaded machine: a generous
      // bound, not a timing claim.
      for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
        id ??= /^run (run_\w+)/m.exec(out)?.[1];
        const steps = id ? await backend.loadSteps(id) : [];
        if (steps[0]?.status === "completed") break;
        await sleep(25);
      }
    } finally {
      await backend.close();
    }
    child.kill("SIGKILL");
    await exited;
    expect(id).toBeDefined();

    const r = await cairn(["resume", id ?? "", "--db", db]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/RUNNING → INTERRUPTED\s+user local\s+worker \S+ was lost/);
    expect(r.stdout).toContain("INTERRUPTED → RESUMING");
    expect(r.stdout).toMatch(/RESUMING → RUNNING[\s\S]*RUNNING → COMPLETED/);
    expect(r.stdout).toContain("restored from checkpoints, not run again: fetch_data (#1)");
    expect(r.stdout).toContain("2026-Q4: revenue");

    const shown = await cairn(["show", id ?? "", "--db", db]);
    expect(shown.stdout).toMatch(/1\s+tool\s+fetch_data\s+completed\s+1\s/);
    expect(shown.stdout).toMatch(/2\s+tool\s+summarize\s+completed\s+2\s/);
    expect(shown.stdout).toContain("AttemptInterrupted");
  }, 90_000);
});
