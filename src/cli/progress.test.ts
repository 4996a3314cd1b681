import { afterEach, describe, expect, it, vi } from "vitest";
import type { RunEventBody } from "../core/events.ts";
import type { StepRecord, WaitRecord } from "../core/records.ts";
import type { Io } from "./format.ts";
import { JournalProgress } from "./journal-progress.ts";
import { LiveProgress } from "./progress.ts";
import { waitSubject } from "./waits.ts";

/** An Io that records what it is given: lines as `out:`/`err:` entries, raw writes as they come. */
function recorder(options: { tty: boolean; raw: boolean }) {
  const seen: string[] = [];
  const io: Io = {
    out: (line = "") => seen.push(`out:${line}`),
    err: (line = "") => seen.push(`err:${line}`),
    ...(options.raw && { write: (text: string) => seen.push(`raw:${text}`) }),
    isTTY: options.tty,
  };
  return { io, seen };
}

const ERASE_LINE = "\r\x1b[2K";

const start = (seq: number, attempt = 1): RunEventBody => ({
  type: "step.start",
  seq,
  attempt,
  kind: "tool",
  name: "crunch",
});

afterEach(() => {
  vi.useRealTimers();
});

describe("LiveProgress", () => {
  it("on a terminal, draws a spinner line for a step running over a second, and wipes it before any line", () => {
    vi.useFakeTimers();
    let now = 0;
    const { io, seen } = recorder({ tty: true, raw: true });
    const progress = new LiveProgress(io, { now: () => now, tickMs: 100 });
    progress.event(start(2));
    now = 500;
    vi.advanceTimersByTime(100);
    // Under a second: no live line yet.
    expect(seen).toEqual(['out:  step 2 tool "crunch": attempt 1 started']);
    now = 2100;
    vi.advanceTimersByTime(100);
    expect(seen.at(-1)).toBe(`raw:${ERASE_LINE}  ⠙ step 2 tool "crunch": attempt 1 running 2s`);
    progress.io.err("a log line");
    expect(seen.slice(-2)).toEqual([`raw:${ERASE_LINE}`, "err:a log line"]);
    progress.event({
      type: "step.end",
      seq: 2,
      attempt: 1,
      kind: "tool",
      name: "crunch",
      status: "completed",
      durationMs: 2100,
    });
    expect(seen.at(-1)).toBe('out:  step 2 tool "crunch": attempt 1 completed in 2s');
    progress.close();
  });

  it("not on a terminal, says a long step still runs every 30 s, in plain lines", () => {
    vi.useFakeTimers();
    let now = 0;
    const { io, seen } = recorder({ tty: false, raw: true });
    const progress = new LiveProgress(io, { now: () => now, tickMs: 100 });
    progress.event(start(1));
    now = 31_000;
    vi.advanceTimersByTime(100);
    now = 45_000;
    vi.advanceTimersByTime(100);
    progress.close();
    expect(seen).toEqual([
      'out:  step 1 tool "crunch": attempt 1 started',
      'out:  step 1 tool "crunch": attempt 1 still running (30s)',
    ]);
    expect(seen.join("")).not.toContain("\x1b");
  });

  it("streams model text indented; a line printed meanwhile starts on a line of its own", () => {
    const { io, seen } = recorder({ tty: false, raw: true });
    const progress = new LiveProgress(io);
    progress.event({ type: "model.text", seq: 1, attempt: 1, text: "Hello " });
    progress.event({ type: "model.text", seq: 1, attempt: 1, text: "world\nsecond" });
    progress.io.out("a transition");
    expect(seen).toEqual(["raw:    Hello ", "raw:world", "raw:\n", "raw:    second", "raw:\n", "out:a transition"]);
  });

  it("holds text until its line ends when the Io writes lines only; --quiet drops it", () => {
    const { io, seen } = recorder({ tty: false, raw: false });
    const progress = new LiveProgress(io);
    progress.event({ type: "model.text", seq: 1, attempt: 1, text: "one " });
    progress.event({ type: "model.text", seq: 1, attempt: 1, text: "two\nthree" });
    progress.event({ type: "model.end", seq: 1, attempt: 1, status: "completed" });
    expect(seen).toEqual(["out:    one two", "out:    three"]);
    const quiet = recorder({ tty: false, raw: true });
    new LiveProgress(quiet.io, { quiet: true }).event({ type: "model.text", seq: 1, attempt: 1, text: "secret plan" });
    expect(quiet.seen).toEqual([]);
  });

  it("says a retry with its cause and the wait, and whether the run pauses; a model call is not a tool", () => {
    const { io, seen } = recorder({ tty: false, raw: true });
    const progress = new LiveProgress(io);
    const retry = { type: "step.retry", seq: 4, attempt: 1, name: "default", error: "ECONNREFUSED" } as const;
    progress.event({ ...retry, kind: "llm", delayMs: 1000, paused: false });
    progress.event({ ...retry, kind: "llm", attempt: 2, delayMs: 30_000, paused: true });
    expect(seen).toEqual([
      'out:  step 4 model call "default": attempt 2 in 1s, after: ECONNREFUSED',
      'out:  step 4 model call "default": attempt 3 in 30s (the run pauses meanwhile), after: ECONNREFUSED',
    ]);
  });

  it("says a wait for a slot of a rate limit, with the limit and the wait", () => {
    const { io, seen } = recorder({ tty: false, raw: true });
    const base = { type: "step.rate_limited", seq: 2, attempt: 1, kind: "tool", name: "search" } as const;
    new LiveProgress(io).event({ ...base, rateLimit: "search-api", limit: 2, periodMs: 60_000, waitMs: 30_000 });
    expect(seen).toEqual([
      'out:  step 2 tool "search": attempt 1 waits 30s for a slot of rate limit "search-api" (2 per 1m)',
    ]);
  });
});

describe("JournalProgress", () => {
  const step = (attempts: StepRecord["attempts"], status: StepRecord["status"] = "started"): StepRecord =>
    ({ seq: 3, kind: "tool", name: "post", status, attempts }) as unknown as StepRecord;

  it("gives the attempts that started or ended since the last read, not those already shown", () => {
    const failed = { attempt: 1, startedAt: 10, endedAt: 15, error: { name: "Error", message: "refused" } };
    const journal = new JournalProgress([step([{ attempt: 1, startedAt: 10, endedAt: null }])]);
    expect(journal.read([step([failed])]).map((e) => e.event)).toEqual([
      {
        type: "step.end",
        seq: 3,
        attempt: 1,
        kind: "tool",
        name: "post",
        status: "failed",
        durationMs: 5,
        error: "refused",
      },
    ]);
    const done = { attempt: 2, startedAt: 20, endedAt: 27 };
    const events = journal.read([step([failed, done], "completed")]);
    expect(events.map((e) => [e.event.type, e.startedAt])).toEqual([
      ["step.start", 20],
      ["step.end", 20],
    ]);
    expect(journal.read([step([failed, done], "completed")])).toEqual([]);
  });
});

describe("a retry wait's subject", () => {
  const wait = (details: Record<string, unknown>) =>
    ({ id: "r4.2", kind: "retry", name: "default", details }) as unknown as WaitRecord;

  it("names the kind of the step retried: a model call's is not a tool's; older records say step", () => {
    expect(waitSubject(wait({ attempt: 2, stepKind: "llm" }))).toBe('of model call "default", attempt 2');
    expect(waitSubject(wait({ attempt: 2, stepKind: "tool" }))).toBe('of tool "default", attempt 2');
    expect(waitSubject(wait({ attempt: 2 }))).toBe('of step "default", attempt 2');
  });
});
