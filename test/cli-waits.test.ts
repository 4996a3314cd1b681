import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { RunRecord, WaitRecord } from "../src/core/records.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { type Background, background, cairn } from "./helpers/cli.ts";

/**
 * The commands that act on a paused run — `signal`, `answer`, `approve`, `deny`, `cancel` — and
 * what `runs` and `show` say about its waits, run as a user runs them: a `cairn run` process that
 * drives the run (and waits while it is PAUSED), and separate `cairn` processes acting on it, on
 * one SQLite file.
 */
const dir = mkdtempSync(join(tmpdir(), "cairn-cli-waits-"));
const db = join(dir, "waits.db");
const agent = "test/fixtures/expense-agent.ts";

/** Spawning a `cairn` process takes seconds on a busy machine: these tests run a dozen each. */
const LONG = 180_000;

const running: Background[] = [];

function startRun(workflow: string, input: string): Background {
  const run = background(["run", agent, "expenses", workflow, "--input", input, "--db", db]);
  running.push(run);
  return run;
}

async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** Reads the database directly (the test's own look, not the CLI's). */
async function read<T>(fn: (backend: SqliteBackend) => Promise<T>): Promise<T> {
  const backend = new SqliteBackend({ path: db });
  await backend.init();
  try {
    return await fn(backend);
  } finally {
    await backend.close();
  }
}

/** The run id `cairn run` printed, once it has. */
async function runIdOf(run: Background): Promise<string> {
  try {
    return await until("the run id", async () => {
      const id = /^run (run_\w+)/m.exec(run.stdout())?.[1];
      if (id === undefined && run.child.exitCode !== null) throw new Error(`cairn run exited ${run.child.exitCode}`);
      return id;
    });
  } catch (error) {
    throw new Error(`${(error as Error).message}\nstdout:\n${run.stdout()}\nstderr:\n${run.stderr()}`);
  }
}

/** Waits until the run is PAUSED with `waitId` open. */
function pausedOn(runId: string, waitId: string): Promise<{ run: RunRecord; wait: WaitRecord }> {
  return until(`run ${runId} to pause on ${waitId}`, () =>
    read(async (backend) => {
      const run = await backend.getRun(runId);
      const wait = (await backend.loadWaits(runId)).find((w) => w.id === waitId && w.status === "open");
      return run?.state === "PAUSED" && wait ? { run, wait } : undefined;
    }),
  );
}

/** `cairn <args> --db <db>`. */
function cli(...args: string[]) {
  return cairn([...args, "--db", db]);
}

afterEach(() => {
  for (const run of running.splice(0)) if (run.child.exitCode === null) run.child.kill("SIGKILL");
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("cairn CLI: paused runs", () => {
  it(
    "answers a question (a bad answer first), then approves with the digest `show` prints",
    async () => {
      const started = startRun("submit", '{"amount":420}');
      const id = await runIdOf(started);
      await pausedOn(id, "w1");

      // `cairn run` says what the run waits for and how to answer, and keeps waiting.
      await until("the pause hint", async () => (started.stdout().includes("cairn answer") ? true : undefined));
      expect(started.stdout()).toMatch(/RUNNING → PAUSED \(awaiting_user\)/);
      expect(started.stdout()).toContain(`cairn answer ${id} w1 '<text>' --db ${db}`);

      const paused = await cli("runs", "--state", "PAUSED");
      expect(paused.code).toBe(0);
      expect(paused.stdout).toMatch(new RegExp(`${id}\\s+expenses/submit\\s+PAUSED \\(awaiting_user\\)`));
      expect(paused.stdout).toContain('↳ question "Which cost center pays for this expense?" (w1)');

      // Not a cost center: refused with the schema's complaint, and the run still waits.
      const bad = await cli("answer", id, "w1", "finance", "--by", "bob");
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/^error: \[INVALID_INPUT\] answer to "Which cost center pays for this expense\?"/);
      expect(bad.stderr).toContain("must match pattern");
      expect(bad.stderr).toContain(`run ${id} still waits for an answer`);
      expect(bad.stdout).toBe("");
      expect((await read((b) => b.getRun(id)))?.state).toBe("PAUSED");

      // A bare word that is not JSON is taken as text.
      const good = await cli("answer", id, "w1", "CC-42", "--by", "bob");
      expect(good.stderr).toBe("");
      expect(good.code).toBe(0);
      expect(good.stdout).toContain(
        `answered question "Which cost center pays for this expense?" (w1) of run ${id}: "CC-42"`,
      );
      expect(good.stdout).toMatch(/PAUSED → RESUMING\s+user bob\s+answered by user bob/);

      // The `cairn run` process goes on with the run, up to the approval.
      await pausedOn(id, "w2");
      const awaiting = await cli("runs", "--state", "PAUSED");
      expect(awaiting.stdout).toMatch(new RegExp(`${id}\\s+expenses/submit\\s+PAUSED \\(awaiting_approval\\)`));
      expect(awaiting.stdout).toMatch(
        /↳ approval "pay_expense" \(w2\): approvers alice; expires \d{4}-\d\d-\d\d [\d:]+ \(in (23h|1d)\)/,
      );

      const noDigest = await cli("approve", id, "w2", "--by", "alice");
      expect(noDigest.code).toBe(2);
      expect(noDigest.stderr).toMatch(/^error: --digest is required/);
      expect(noDigest.stderr).toContain(`cairn show ${id}`);

      const noBy = await cli("deny", id, "w2", "--digest", "sha256:00");
      expect(noBy.code).toBe(2);
      expect(noBy.stderr).toMatch(/^error: --by is required/);

      const wrong = await cli("approve", id, "w2", "--by", "alice", "--digest", "sha256:0000");
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toMatch(/^error: \[APPROVAL_REFUSED\] the digest given for approval "pay_expense" \(w2\)/);
      expect(wrong.stderr).toContain("nothing was decided: the approval is still open");

      const notApprover = await cli("approve", id, "w2", "--by", "mallory", "--digest", "sha256:0000");
      expect(notApprover.code).toBe(1);
      expect(notApprover.stderr).toContain("mallory may not decide");

      // `show` has the payload, its digest, and the command line to copy.
      const shown = await cli("show", id);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toContain("waits (2)");
      expect(shown.stdout).toMatch(
        /w1\s+question\s+resolved\s+"Which cost center pays for this expense\?": answered "CC-42" by user bob/,
      );
      expect(shown.stdout).toMatch(/w2\s+approval\s+open\s+"pay_expense": expires /);
      expect(shown.stdout).toMatch(
        /payload\s+\{\n\s+"amount": 420,\n\s+"currency": "EUR",\n\s+"costCenter": "CC-42"\n\s+\}/,
      );
      const digest = /digest\s+(sha256:[0-9a-f]{64})$/m.exec(shown.stdout)?.[1];
      expect(digest).toBeDefined();
      const command = /^\s+approve\s+(cairn approve .*)$/m.exec(shown.stdout)?.[1] ?? "";
      expect(command).toBe(`cairn approve ${id} w2 --by alice --digest ${digest} --db ${db}`);
      expect(shown.stdout).toContain(`cairn deny ${id} w2 --by alice --digest ${digest} --db ${db}`);

      // Copied as is (no shell needed: no word in it is quoted).
      const approved = await cairn(command.split(" ").slice(1));
      expect(approved.stderr).toBe("");
      expect(approved.code).toBe(0);
      expect(approved.stdout).toContain(`approved "pay_expense" (w2) of run ${id} as user alice`);
      expect(approved.stdout).toMatch(/PAUSED → RESUMING\s+user alice\s+approval w2 approved by user alice/);

      const ended = await started.exited;
      expect(ended.stderr).toBe("");
      expect(ended.code).toBe(0);
      expect(ended.stdout).toContain("RUNNING → COMPLETED");
      expect(ended.stdout).toContain('"ref": "PAY-CC-42-420"');
      expect(ended.stdout).toContain('"approvedBy": "alice"');
      // Every transition once, in order, those the other processes made included.
      const ids = [...ended.stdout.matchAll(/^ {2}#(\d+)/gm)].map((m) => Number(m[1]));
      expect(ids).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);

      const after = await cli("show", id);
      expect(after.stdout).toMatch(/w2\s+approval\s+resolved\s+"pay_expense": approved by user alice/);
      expect(after.stdout).not.toContain("cairn approve");

      const again = await cli("approve", id, "w2", "--by", "alice", "--digest", digest ?? "");
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/^error: \[RUN_NOT_OPEN\]/);
    },
    LONG,
  );

  it(
    "signals a run (kept in the inbox, delivered, a duplicate), then cancels it with --wait",
    async () => {
      const started = startRun("inbox", "null");
      const id = await runIdOf(started);
      await pausedOn(id, "w1");

      const paused = await cli("runs", "--state", "PAUSED");
      expect(paused.stdout).toMatch(new RegExp(`${id}\\s+expenses/inbox\\s+PAUSED \\(awaiting_signal\\)`));
      expect(paused.stdout).toContain('↳ signal "go" (w1)');

      const kept = await cli("signal", id, "done", "--payload", '{"total":3}', "--message-id", "d1");
      expect(kept.code).toBe(0);
      expect(kept.stdout).toContain(
        `signal "done" (message d1) kept in the inbox of run ${id}: nothing waits for "done" yet`,
      );

      const shown = await cli("show", id);
      expect(shown.stdout).toMatch(/inbox: 1 signal not consumed yet: "done" \(message d1, /);
      expect(shown.stdout).toContain(`cairn signal ${id} go --payload '<json>' --db ${db}`);

      const bad = await cli("signal", id, "go", "--payload", "{n:1}");
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/^error: --payload is not valid JSON/);

      const delivered = await cli("signal", id, "go", "--payload", '{"n":1}', "--message-id", "m1", "--by", "ops");
      expect(delivered.stderr).toBe("");
      expect(delivered.code).toBe(0);
      expect(delivered.stdout).toContain(`signal "go" (message m1) delivered to run ${id}: it resolved the wait w1`);
      expect(delivered.stdout).toMatch(/PAUSED → RESUMING\s+user ops/);

      const duplicate = await cli("signal", id, "go", "--payload", '{"n":2}', "--message-id", "m1");
      expect(duplicate.code).toBe(0);
      expect(duplicate.stdout).toContain(`signal "go" (message m1) to run ${id}: a duplicate`);

      // "done" was in the inbox: the run consumes it and completes.
      const ended = await started.exited;
      expect(ended.code).toBe(0);
      expect(ended.stdout).toMatch(/"go": \{\s+"n": 1\s+\}/);
      expect(ended.stdout).toMatch(/"done": \{\s+"total": 3\s+\}/);

      // A second run, cancelled while it waits.
      const second = startRun("inbox", "null");
      const secondId = await runIdOf(second);
      await pausedOn(secondId, "w1");
      const cancelled = await cli("cancel", secondId, "--reason", "no longer needed", "--by", "ops", "--wait");
      expect(cancelled.stderr).toBe("");
      expect(cancelled.code).toBe(0);
      expect(cancelled.stdout).toContain(
        `cancel requested for run ${secondId} (expenses/inbox) by user ops: no longer needed`,
      );
      expect(cancelled.stdout).toMatch(/PAUSED → CANCELLING\s+user ops\s+cancel requested by user ops: no longer/);
      expect(cancelled.stdout).toMatch(/CANCELLING → CANCELLED\s+worker \S+\s+cancelled by user ops/);
      const secondEnd = await second.exited;
      expect(secondEnd.code).toBe(1);
      expect(secondEnd.stderr).toMatch(/^error: run run_\w+ ended CANCELLED: \[CANCELLED\]/);

      const twice = await cli("cancel", secondId);
      expect(twice.code).toBe(1);
      expect(twice.stderr).toMatch(/^error: \[RUN_NOT_OPEN\] run run_\w+ is CANCELLED; there is nothing to cancel/);
    },
    LONG,
  );

  it(
    "cancels a paused run nothing drives; `resume` finishes the cancel",
    async () => {
      const started = startRun("inbox", "null");
      const id = await runIdOf(started);
      await pausedOn(id, "w1");
      started.child.kill("SIGTERM");
      const stopped = await started.exited;
      expect(stopped.stderr).toContain("SIGTERM: stopping; the run stays PAUSED");

      const cancelled = await cli("cancel", id);
      expect(cancelled.code).toBe(0);
      expect(cancelled.stdout).toMatch(/PAUSED → CANCELLING/);
      expect(cancelled.stdout).toContain(`if none is running: cairn resume ${id} --db ${db}`);

      const resumed = await cli("resume", id);
      expect(resumed.stdout).toContain("run is CANCELLING and no worker holds it: driving it here");
      expect(resumed.stdout).toMatch(/CANCELLING → CANCELLED\s+worker /);
      expect(resumed.code).toBe(1);
    },
    LONG,
  );

  it(
    "refuses bad command lines with exit code 2 and lists the new commands in help",
    async () => {
      const help = await cairn(["help"]);
      expect(help.code).toBe(0);
      for (const name of ["signal", "answer", "approve", "deny", "cancel"]) {
        expect(help.stdout).toMatch(new RegExp(`^ {2}${name}\\s+\\S`, "m"));
      }
      const answerHelp = await cairn(["help", "answer"]);
      expect(answerHelp.stdout).toContain("is taken as text");

      const missing = await cairn(["answer", "run_x", "w1", "--db", db]);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/^error: missing <value>/);

      const brokenJson = await cairn(["answer", "run_x", "w1", '{"costCenter":', "--db", db]);
      expect(brokenJson.code).toBe(2);
      expect(brokenJson.stderr).toMatch(/^error: <value> looks like JSON but does not parse/);

      const unknown = await cairn(["signal", "run_nope", "go", "--db", db]);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toMatch(/^error: \[RUN_NOT_FOUND\] no run with id "run_nope"/);
    },
    LONG,
  );
});
