import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cairn, root } from "./helpers/cli.ts";

/**
 * `cairn run`'s live progress, as a user sees it: a real `cairn` process on a module whose tool
 * fails once and whose model cannot reach its provider once, then streams its text. Through a
 * pipe (not a terminal) and through a pseudo-terminal (`script` from util-linux).
 */
const dir = mkdtempSync(join(tmpdir(), "cairn-progress-"));
const module = "test/fixtures/progress-agent.ts";
const args = (db: string, ...more: string[]) => ["run", module, "progress", "report", "--db", join(dir, db), ...more];

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The index of the first line matching each pattern, in order; fails naming the first one missing. */
function linesInOrder(text: string, patterns: RegExp[]): number[] {
  const lines = text.split(/\r?\n/);
  let from = 0;
  return patterns.map((pattern) => {
    const at = lines.findIndex((line, i) => i >= from && pattern.test(line));
    if (at < 0) throw new Error(`no line after line ${from} matches ${pattern} in:\n${text}`);
    from = at + 1;
    return at;
  });
}

/** Carriage return, then erase the line: how the live line is drawn over and wiped. */
const ERASE_LINE = "\r\x1b[2K";
const TOOL = /^ {2}step (\d+) tool "fetch_ledger"/;
const MODEL = /^ {2}step \d+ model call "default"/;

describe("cairn run's live progress", () => {
  it("prints step attempts, retries with their cause and wait, and the streamed text, in order (a pipe)", async () => {
    const r = await cairn(args("plain.db"));
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain("\x1b");
    linesInOrder(r.stdout, [
      /PENDING → RUNNING/,
      new RegExp(`${TOOL.source}: attempt 1 started$`),
      new RegExp(`${TOOL.source}: attempt 1 failed after \\d+ ms: connection refused by the ledger$`),
      new RegExp(`${TOOL.source}: attempt 2 in 50 ms, after: connection refused by the ledger$`),
      new RegExp(`${TOOL.source}: attempt 2 completed in \\d+ ms$`),
      new RegExp(`${MODEL.source}: attempt 1 started$`),
      // The unreachable provider: the failed attempt and the wait, at once, as a model call's.
      new RegExp(`${MODEL.source}: attempt 1 failed after \\d+ ms: fetch failed: connect ECONNREFUSED`),
      new RegExp(`${MODEL.source}: attempt 2 in 100 ms, after: fetch failed: connect ECONNREFUSED`),
      new RegExp(`${MODEL.source}: attempt 2 started$`),
      /^ {4}Revenue grew twelve percent this quarter\.$/,
      new RegExp(`${MODEL.source}: attempt 2 completed in \\d+ ms$`),
      /RUNNING → COMPLETED/,
      /^result:$/,
    ]);
    expect(r.stdout).not.toMatch(/tool "default"/);
  });

  it("leaves the streamed text out with --quiet, and logs JSON lines with --log-format json", async () => {
    const r = await cairn(args("quiet.db", "--quiet", "--log-format", "json", "--log-level", "info"));
    expect(r.code).toBe(0);
    // The text is in the result only, not streamed under its step.
    expect(r.stdout).not.toMatch(/^ {4}Revenue grew/m);
    linesInOrder(r.stdout, [new RegExp(`${MODEL.source}: attempt 2 completed`), /^result:$/, /Revenue grew/]);
    const logs = r.stderr
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const retry = logs.find((l) => String(l.msg).includes('tool "fetch_ledger"') && String(l.msg).includes("retrying"));
    expect(retry).toMatchObject({ level: 30, step: 1, error: "connection refused by the ledger" });
    expect(String(retry?.runId)).toMatch(/^run_/);
    expect(String(retry?.worker)).not.toBe("");
  });

  it("cairn resume prints the same lines for the steps it drives; --quiet leaves the text out", async () => {
    for (const quiet of [false, true]) {
      const db = join(dir, `resume-${quiet}.db`);
      // Left PENDING for a worker: `cairn resume` drives it in its own process, from its first step.
      const detached = await cairn(["run", module, "progress", "report", "--db", db, "--detach"]);
      expect(detached.code).toBe(0);
      const id = /^run (run_\w+)/m.exec(detached.stdout)?.[1] ?? "";
      const r = await cairn(["resume", id, "--db", db, ...(quiet ? ["--quiet"] : [])]);
      expect(r.code).toBe(0);
      expect(r.stdout).not.toContain("\x1b");
      const text = /^ {4}Revenue grew twelve percent this quarter\.$/;
      linesInOrder(r.stdout, [
        /^resuming run /,
        /PENDING → RUNNING/,
        new RegExp(`${TOOL.source}: attempt 1 started$`),
        new RegExp(`${TOOL.source}: attempt 1 failed after \\d+ ms: connection refused by the ledger$`),
        new RegExp(`${TOOL.source}: attempt 2 in 50 ms, after: connection refused by the ledger$`),
        new RegExp(`${TOOL.source}: attempt 2 completed in \\d+ ms$`),
        new RegExp(`${MODEL.source}: attempt 2 in 100 ms, after: fetch failed: connect ECONNREFUSED`),
        ...(quiet ? [] : [text]),
        new RegExp(`${MODEL.source}: attempt 2 completed in \\d+ ms$`),
        /RUNNING → COMPLETED/,
      ]);
      if (quiet) expect(r.stdout).not.toMatch(new RegExp(text.source, "m"));
    }
  }, 90_000);

  const hasScript = spawnSync("script", ["--version"]).status === 0;
  it.skipIf(!hasScript)("on a terminal, redraws a live elapsed line for a long step and clears it", async () => {
    const command = [process.execPath, "bin/cairn.js", ...args("tty.db")].join(" ");
    const child = spawn("script", ["-qc", command, "/dev/null"], {
      cwd: root,
      env: { ...process.env, CAIRN_DB: "", CAIRN_DATABASE_URL: "", CAIRN_TEST_SLOW_MS: "1500" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(code).toBe(0);
    // The live line: drawn over itself (carriage return, erase line), with a spinner and the time.
    const marked = out.replaceAll(ERASE_LINE, "<erase>");
    expect(marked).toMatch(/<erase> {2}[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] step \d+ tool "crunch": attempt 1 running \ds/);
    // Wiped before the step's end is printed, which then stands on its own line.
    expect(marked).toMatch(/<erase> {2}step \d+ tool "crunch": attempt 1 completed in \ds\r?\n/);
    linesInOrder(out.replace(/\r(?!\n)/g, "\n"), [
      new RegExp(`${TOOL.source}: attempt 2 in 50 ms`),
      /tool "crunch": attempt 1 started/,
      /tool "crunch": attempt 1 completed/,
      new RegExp(`${MODEL.source}: attempt 2 in 100 ms`),
      /^ {4}Revenue grew twelve percent this quarter\./,
      /RUNNING → COMPLETED/,
    ]);
  });
});
