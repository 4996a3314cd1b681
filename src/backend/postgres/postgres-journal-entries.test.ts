import { describe, expect, it } from "vitest";
import type { StepRecord } from "../../core/records.ts";
import { rowToStep } from "../rows/step-rows.ts";
import { batchStepParams, foldJournal, type JournalRow } from "./postgres-journal-entries.ts";

const step = (seq: number, status: StepRecord["status"], fields: Partial<StepRecord> = {}): StepRecord => ({
  runId: "run_1",
  seq,
  kind: "tool",
  name: "noop",
  status,
  argsDigest: `digest${seq}`,
  args: { i: seq },
  result: undefined,
  error: undefined,
  attempts: [{ attempt: 1, startedAt: 1_000, endedAt: status === "started" ? null : 1_001 }],
  heartbeat: undefined,
  usage: undefined,
  startedAt: 1_000,
  endedAt: status === "started" ? null : 1_001,
  epoch: 3,
  ...fields,
});

/** What a step write stores, read back the way `loadSteps` reads the journal. */
function roundTrip(writes: StepRecord[][]): StepRecord[] {
  const entries: JournalRow[] = writes.map((steps) => {
    const [json] = batchStepParams([{ epoch: 3, steps }], 64 * 1024) as [string];
    const [entry] = JSON.parse(json) as { steps: unknown[] }[];
    return { epoch: 3, steps: JSON.stringify(entry?.steps) };
  });
  return foldJournal("run_1", [], entries).map((row) => rowToStep(row));
}

describe("journal entries", () => {
  it("leave out the NULL columns, and read back with them", () => {
    const [json] = batchStepParams([{ epoch: 3, steps: [step(1, "started")] }], 64 * 1024) as [string];
    expect(json).not.toContain("null,");
    expect(json).not.toContain('"result"');
    expect(json).not.toContain('"error"');
    const started = step(1, "started");
    expect(roundTrip([[started]])).toEqual([started]);
  });

  it("keep a JSON null result apart from no result, and a later write of a seq replaces the earlier", () => {
    const nullResult = step(1, "completed", {
      result: null,
      usage: { inputTokens: 1, outputTokens: 2, modelCalls: 1 },
    });
    const failed = step(2, "failed", {
      error: { name: "Error", message: "no", code: "TOOL_FAILED", retryable: false },
    });
    const back = roundTrip([
      [step(1, "started"), step(2, "started")],
      [nullResult, failed],
    ]);
    expect(back).toEqual([nullResult, failed]);
    expect(back[0]?.result).toBeNull();
    expect(back[1]?.result).toBeUndefined();
  });
});
