import { describe, expect, it } from "vitest";
import { InvalidInputError, ReplayDivergenceError, StepLimitError } from "../errors.ts";
import type { StepKind, StepRecord } from "../records.ts";
import type { EnvelopeHost } from "./envelope-host.ts";
import { ReplayCursor } from "./replay-cursor.ts";

/** The host fields the cursor reads: the step limit and the log. */
function host(maxSteps: number, logged: string[] = []): EnvelopeHost {
  return { maxSteps, log: (_level: string, message: string) => logged.push(message) } as unknown as EnvelopeHost;
}

function recorded(seq: number, kind: StepKind, name: string, extra: Partial<StepRecord> = {}): StepRecord {
  return { seq, kind, name, status: "completed", ...extra } as StepRecord;
}

describe("ReplayCursor", () => {
  it("numbers calls in order and hands back the journal's record of each, in seq order", () => {
    const journal = [recorded(2, "value", "now"), recorded(1, "tool", "fetch")];
    const cursor = new ReplayCursor({ runId: "r1", journal, host: host(100), onDiverged: () => {} });
    expect(cursor.history.map((s) => s.seq)).toEqual([1, 2]);
    expect(cursor.isReplaying).toBe(true);
    expect(cursor.next()?.name).toBe("fetch");
    expect(cursor.take("tool", "fetch")).toEqual({ seq: 1, recorded: journal[1] });
    expect(cursor.take("value", "now")).toEqual({ seq: 2, recorded: journal[0] });
    expect(cursor.isReplaying).toBe(false);
    expect(cursor.take("tool", "send")).toEqual({ seq: 3, recorded: undefined });
    expect(cursor.seq).toBe(3);
  });

  it("reports a call that meets another step than the journal holds, once, and refuses it", () => {
    const seen: ReplayDivergenceError[] = [];
    const cursor = new ReplayCursor({
      runId: "r1",
      journal: [recorded(1, "tool", "fetch")],
      host: host(100),
      onDiverged: (error) => seen.push(error),
    });
    expect(() => cursor.take("tool", "charge")).toThrow(ReplayDivergenceError);
    expect(seen).toHaveLength(1);
    expect(cursor.diverged).toBe(seen[0]);
    expect(seen[0]?.seq).toBe(1);
    expect(seen[0]?.message).toContain('the history has tool "fetch" but the code called tool "charge"');
  });

  it("refuses the step past maxSteps and warns once at 80 % of it", () => {
    const logged: string[] = [];
    const cursor = new ReplayCursor({ runId: "r1", journal: [], host: host(5, logged), onDiverged: () => {} });
    for (let i = 0; i < 5; i++) cursor.take("value", "random");
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain("has taken 4 of its 5 steps");
    expect(() => cursor.take("value", "random")).toThrow(StepLimitError);
  });

  it("refuses a name that cannot be stored before it takes a number", () => {
    const cursor = new ReplayCursor({ runId: "r1", journal: [], host: host(100), onDiverged: () => {} });
    expect(() => cursor.take("tool", "a\u0000b")).toThrow(InvalidInputError);
    expect(() => cursor.take("tool", "x".repeat(513))).toThrow(InvalidInputError);
    expect(cursor.seq).toBe(0);
  });

  it("names the first completed step the code never reached, but not a compensation's", () => {
    const journal = [
      recorded(1, "tool", "fetch"),
      recorded(2, "tool", "send"),
      recorded(3, "tool", "refund", { effect: { compensates: 2 } as StepRecord["effect"] }),
    ];
    const cursor = new ReplayCursor({ runId: "r1", journal, host: host(100), onDiverged: () => {} });
    cursor.take("tool", "fetch");
    expect(cursor.unreached()?.seq).toBe(2);
    cursor.take("tool", "send");
    expect(cursor.unreached()).toBeUndefined();
  });
});
