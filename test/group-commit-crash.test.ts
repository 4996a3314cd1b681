import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteBackend } from "../src/sqlite.ts";
import { type ChildResult, runTsxChild } from "./helpers/tsx-child.ts";

/**
 * The crash test of SQLite's group commit (DESIGN §7): a child process drives 8 runs of 12 steps
 * at once on one file and is SIGKILLed inside a transaction that holds the step writes of several
 * runs (a trigger of its own connection kills it mid-transaction). A fresh process finishes the
 * runs. Every result a workflow went on with (the next step's tool, which runs only once the
 * result before it is durable, logged the value it was given) must be what the run ends with,
 * from a single execution of its tool: none lost, none run twice; each run's journal holds each
 * step once; and the steps the killed transaction held ran again.
 */

const CHILD = join(import.meta.dirname, "group-crash", "group-crash-child.ts");
const root = mkdtempSync(join(tmpdir(), "cairn-group-crash-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const RUNS = 8;
const STEPS = 12;

function child(args: string[]): Promise<ChildResult> {
  return runTsxChild(CHILD, args, 60_000);
}

/** The lines of every file of `dir` whose name starts with `prefix`, split on spaces. */
function lines(dir: string, prefix: string): string[][] {
  return readdirSync(dir)
    .filter((f) => f.startsWith(prefix))
    .flatMap((f) => readFileSync(join(dir, f), "utf8").trim().split("\n"))
    .filter((l) => l.length > 0)
    .map((l) => l.split(" "));
}

describe("SQLite group commit, SIGKILL inside a shared transaction", { timeout: 180_000 }, () => {
  it.each([30, 70, 130])("keeps every result a workflow went on with (killed at step write %i)", async (killAt) => {
    const dir = mkdtempSync(join(root, `kill-${killAt}-`));
    const db = join(dir, "cairn.db");

    const first = await child([db, dir, "start", String(RUNS), String(STEPS), String(killAt)]);
    expect(first.signal, `the first process should die by SIGKILL\n${first.stdout}\n${first.stderr}`).toBe("SIGKILL");
    // The transaction it died in held the step writes of several runs.
    expect(Number(readFileSync(join(dir, "killed"), "utf8"))).toBeGreaterThanOrEqual(2);
    // `<run> <step> <the previous step's value>` for each tool execution of the first process.
    const firstCalls = lines(dir, "calls-");
    const passedOn = firstCalls.filter(([, i]) => Number(i) > 0);
    expect(passedOn.length).toBeGreaterThan(0);

    const second = await child([db, dir, "resume"]);
    expect(second.code, second.stderr).toBe(0);
    const outputs = JSON.parse(second.stdout.trim().split("\n").at(-1) ?? "{}") as Record<
      string,
      { state: string; output: string[] }
    >;
    expect(Object.keys(outputs)).toHaveLength(RUNS);
    for (const { state, output } of Object.values(outputs)) {
      expect(state).toBe("COMPLETED");
      expect(output).toHaveLength(STEPS);
    }

    // Every value the first process passed on is the one its run ended with, from one execution.
    const calls = lines(dir, "calls-");
    const executions = (runId: string, i: number) => calls.filter(([r, j]) => r === runId && Number(j) === i).length;
    for (const [runId, i, prev] of passedOn) {
      const run = outputs[runId as string];
      expect(run, `run ${runId}`).toBeDefined();
      expect(run?.output[Number(i) - 1], `run ${runId} step ${Number(i) - 1}`).toBe(prev);
      expect(executions(runId as string, Number(i) - 1)).toBe(1);
    }
    // What the killed transaction held was lost with it: those steps ran again.
    const again = firstCalls.filter(([r, i]) => executions(r as string, Number(i)) > 1);
    expect(again.length).toBeGreaterThan(0);

    // Each run's journal holds each tool step once, completed, with the value its output has.
    const backend = new SqliteBackend({ path: db });
    await backend.init();
    try {
      for (const [runId, { output }] of Object.entries(outputs)) {
        const tools = (await backend.loadSteps(runId)).filter((s) => s.kind === "tool");
        expect(tools.map((s) => s.status)).toEqual(Array(STEPS).fill("completed"));
        expect(new Set(tools.map((s) => s.seq)).size).toBe(STEPS);
        expect(tools.map((s) => s.result)).toEqual(output);
      }
    } finally {
      await backend.close();
    }
  });
});
