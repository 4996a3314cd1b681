import { describe, expect, it } from "vitest";
import type { StepRecord } from "../records.ts";
import { JournalWriter } from "./journal-writer.ts";

const step = (seq: number, status: StepRecord["status"] = "started") => ({ seq, status }) as StepRecord;

describe("JournalWriter", () => {
  it("commits queued results with the next write, and before() waits for that commit", async () => {
    const writes: { seqs: number[]; sync: boolean }[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const writer = new JournalWriter(async (steps, sync) => {
      writes.push({ seqs: steps.map((s) => s.seq), sync });
      if (writes.length === 1) await gate;
    });
    writer.later(step(1, "completed"), true);
    let started = false;
    const before = writer.before(step(2)).then(() => {
      started = true;
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(writes).toEqual([{ seqs: [1, 2], sync: true }]);
    expect(started).toBe(false);
    release();
    await before;
    expect(started).toBe(true);
  });

  it("coalesces writes of one step and flushes queued writes on the next turn", async () => {
    const writes: number[][] = [];
    const writer = new JournalWriter(async (steps) => {
      writes.push(steps.map((s) => s.seq));
    });
    const s1 = step(1);
    writer.later(s1, false);
    writer.later(s1, false);
    writer.later(step(2, "completed"), true);
    expect(writes).toEqual([]);
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual([[1, 2]]);
  });

  it("drain hands back what is queued instead of writing it, and accepts nothing after", async () => {
    const writes: number[][] = [];
    const writer = new JournalWriter(async (steps) => {
      writes.push(steps.map((s) => s.seq));
    });
    writer.later(step(1, "completed"), true);
    expect((await writer.drain()).map((s) => `${s.seq}:${s.status}`)).toEqual(["1:completed"]);
    writer.later(step(2, "completed"), true);
    await expect(writer.before(step(3))).rejects.toThrow("after its run ended");
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual([]);
  });

  it("drain waits for the write in flight to commit", async () => {
    const writes: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const writer = new JournalWriter(async (steps) => {
      writes.push(steps.map((s) => s.seq));
      await gate;
    });
    const before = writer.before(step(1));
    await new Promise((r) => setTimeout(r, 5));
    let drained: StepRecord[] | undefined;
    const drain = writer.drain().then((steps) => {
      drained = steps;
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(drained).toBeUndefined();
    release();
    await Promise.all([before, drain]);
    expect(writes).toEqual([[1]]);
    expect(drained).toEqual([]);
  });

  it("reports a failed background write on the next flush", async () => {
    const writer = new JournalWriter(async () => {
      throw new Error("lease lost");
    });
    writer.later(step(1, "completed"), true);
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    await expect(writer.before(step(2))).rejects.toThrow("lease lost");
  });
});
