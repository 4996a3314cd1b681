import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { type ChildResult, runTsxChild } from "./helpers/tsx-child.ts";
import type { SpanLine } from "./tracing/file-span-exporter.ts";

/**
 * Trace continuity across a crash (DESIGN §7c): process A starts a run, exports spans to a file,
 * and is SIGKILLed inside a tool's first attempt; process B takes the run over and finishes it.
 * The spans of both processes are one trace; the step A completed is replayed by B without a span;
 * the step A was running is run again by B, its attempt span marked as a retry.
 */

const CHILD = join(import.meta.dirname, "tracing", "traced-child.ts");

function runChild(...args: string[]): Promise<ChildResult> {
  return runTsxChild(CHILD, args, 40_000);
}

describe("a trace across a SIGKILL and a resume in another process", () => {
  it("is one trace, with no span for replayed steps and the re-run attempt marked retry", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-trace-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const db = join(dir, "cairn.db");
    const file = join(dir, "spans.jsonl");
    const a = await runChild(db, file, dir, "start");
    expect(a.signal, a.stderr).toBe("SIGKILL");
    const { runId } = JSON.parse(a.stdout.trim().split("\n")[0] ?? "{}") as { runId: string };
    const b = await runChild(db, file, dir, "resume");
    expect(b.code, b.stderr).toBe(0);
    expect(JSON.parse(b.stdout.trim())).toMatchObject({ runId, state: "COMPLETED", output: { ok: 3 } });

    const spans = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as SpanLine);
    const pids = [...new Set(spans.map((s) => s.pid))];
    expect(pids).toHaveLength(2);
    const [pidA, pidB] = pids;
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);
    const from = (pid: number | undefined) =>
      spans.filter((s) => s.pid === pid).map((s) => `${s.name}${s.attributes["cairn.retry"] ? " retry" : ""}`);
    // A: the start, the first tool and its attempt (the execution and the crashing step never ended).
    expect(from(pidA).sort()).toEqual(["attempt 1", "start traced_crash.chain", "tool first"]);
    // B: a resumed execution; `first` is replayed (no span), `crash` runs again as a retry.
    expect(from(pidB).sort()).toEqual([
      "attempt 1",
      "attempt 2 retry",
      "run traced_crash.chain",
      "tool crash",
      "tool last",
    ]);
    const start = spans.find((s) => s.name === "start traced_crash.chain");
    const execution = spans.find((s) => s.name === "run traced_crash.chain");
    expect(execution?.parentId).toBe(start?.spanId);
    expect(execution?.attributes).toMatchObject({ "cairn.run.id": runId, "cairn.run.resumed": true });
    const retry = spans.find((s) => s.name === "attempt 2");
    expect(retry?.attributes).toMatchObject({
      "cairn.attempt": 2,
      "cairn.retry": true,
      "cairn.retry.cause": "AttemptInterrupted",
      "cairn.step.index": 2,
    });
    expect(spans.find((s) => s.name === "tool crash")?.attributes).toMatchObject({ "cairn.step.attempts": 2 });
  });
});
