import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteBackend } from "../src/sqlite.ts";
import { expectedOutput, TOOL_COUNT } from "./crash/crash-agent.ts";
import { RECOVERED_PATH, STRAIGHT_PATH } from "./helpers/paths.ts";
import { type ChildResult, runTsxChild } from "./helpers/tsx-child.ts";

/**
 * The crash test of DESIGN §4: a child process runs the 10-tool workflow on SQLite and is
 * killed with SIGKILL at every step boundary (before the start record, between start and
 * result, after the result): 30 kill points. Each time a fresh process resumes the run, and
 * the test checks the output, the tool executions (counted in files outside the database), the
 * attempts recorded on each step and the transition log.
 */

const CHILD = join(import.meta.dirname, "crash", "crash-child.ts");
const root = mkdtempSync(join(tmpdir(), "cairn-crash-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function child(args: string[]): Promise<ChildResult> {
  return runTsxChild(CHILD, args, 40_000);
}

function counts(dir: string): number[] {
  const out: number[] = [];
  for (let i = 1; i <= TOOL_COUNT; i++) {
    try {
      out.push(readFileSync(join(dir, `t${i}`), "utf8").length);
    } catch {
      out.push(0);
    }
  }
  return out;
}

const POINTS = ["before-start", "before-result", "after-result"] as const;
const cases = POINTS.flatMap((point) => Array.from({ length: TOOL_COUNT }, (_, i) => ({ point, seq: i + 1 })));

// Each case starts two tsx processes, five cases at a time: on a loaded 2-core machine that can
// take far longer than the default 30 s without anything being wrong.
describe.concurrent("SIGKILL at every step boundary, resumed by a fresh process", { timeout: 120_000 }, () => {
  it.each(cases)("kill $point of tool $seq", async ({ point, seq }) => {
    const dir = mkdtempSync(join(root, `${point}-${seq}-`));
    const db = join(dir, "cairn.db");

    // Half the resumes wait for the dead worker's lease to lapse; half notice at once that its
    // process is gone (its lease is made long enough that only that can explain the recovery).
    const how = seq % 2 === 0 ? "lease" : "pid";
    const first = await child([db, dir, "start", point, String(seq), how === "lease" ? "1000" : "600000"]);
    expect(first.signal, `the first process should die by SIGKILL\n${first.stderr}`).toBe("SIGKILL");
    const before = counts(dir);

    const second = await child([db, dir, "resume", how]);
    expect(second.code, second.stderr).toBe(0);
    const result = JSON.parse(second.stdout.trim().split("\n").at(-1) ?? "{}");
    expect(result.state).toBe("COMPLETED");
    expect(result.output).toEqual(expectedOutput("s"));

    // A completed result is committed with the run's next write (group commit): the start record
    // of the next tool. So at "before-start" of tool N the unsaved result is tool N-1's, and
    // after "after-result" of tool N, tool N+1's start is already committed (it had not run).
    // The last tool's result rides with COMPLETED: after it is committed the run has ended.
    const endedBeforeKill = point === "after-result" && seq === TOOL_COUNT;
    const ranUnsaved = point === "before-start" ? seq - 1 : point === "before-result" ? seq : 0;
    const startedNotEnded = point === "after-result" ? seq + 1 : ranUnsaved;
    const savedUpTo = point === "after-result" ? seq : ranUnsaved > 0 ? ranUnsaved - 1 : seq - 1;
    const after = counts(dir);
    for (let i = 1; i <= TOOL_COUNT; i++) {
      const n = after[i - 1];
      if (i <= savedUpTo) {
        // A tool whose result was committed never runs again.
        expect(before[i - 1], `tool t${i} ran before the kill`).toBe(1);
        expect(n, `tool t${i} had a saved result`).toBe(1);
      } else if (i === ranUnsaved) {
        // The tool in flight (run, result not committed) runs at most once more.
        expect(before[i - 1], `tool t${i} ran before the kill`).toBe(1);
        expect(n, `tool t${i} was in flight`).toBe(2);
      } else {
        expect(before[i - 1], `tool t${i} had not run`).toBe(0);
        expect(n, `tool t${i} ran after the resume`).toBe(1);
      }
    }

    const backend = new SqliteBackend({ path: db });
    await backend.init();
    try {
      const transitions = await backend.listTransitions(result.runId);
      if (endedBeforeKill) {
        expect(transitions.map((t) => `${t.from ?? "-"}>${t.to}`)).toEqual(STRAIGHT_PATH);
      } else {
        expect(transitions.map((t) => t.id)).toEqual([1, 2, 3, 4, 5, 6]);
        expect(transitions.map((t) => `${t.from ?? "-"}>${t.to}`)).toEqual(RECOVERED_PATH);
        const interrupted = transitions[2];
        expect(interrupted?.actor.kind).toBe("system");
        expect(interrupted?.reason).toMatch(how === "lease" ? /lease lapsed/ : /process is gone/);
        // The reason names the lost owner: the first process's worker.
        expect(interrupted?.reason).toContain(transitions[1]?.actor.id);
      }
      const steps = await backend.loadSteps(result.runId);
      expect(steps.map((s) => s.status)).toEqual(Array(TOOL_COUNT).fill("completed"));
      for (const step of steps) {
        const expected = step.seq === startedNotEnded ? ["AttemptInterrupted", "ok"] : ["ok"];
        expect(
          step.attempts.map((a) => a.error?.name ?? "ok"),
          `attempts of tool t${step.seq}`,
        ).toEqual(expected);
      }
    } finally {
      await backend.close();
    }
  });
});

describe("an uncrashed run", () => {
  it("gives the same output with each tool run once", async () => {
    const dir = mkdtempSync(join(root, "none-"));
    const run = await child([join(dir, "cairn.db"), dir, "start", "none", "0"]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout.trim()).output).toEqual(expectedOutput("s"));
    expect(counts(dir)).toEqual(Array(TOOL_COUNT).fill(1));
  });
});
