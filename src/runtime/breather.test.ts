import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { breather } from "./breather.ts";

describe("breather", () => {
  it("lets the event loop turn once the steps of one turn have run for the limit", async () => {
    let clock = 0;
    const breathe = breather(5, () => clock);
    expect(breathe()).toBeUndefined();
    clock = 4.9;
    expect(breathe()).toBeUndefined();
    // It resolves on a turn of the event loop, after what was queued for that turn before it.
    const order: string[] = [];
    setImmediate(() => order.push("queued before"));
    clock = 5;
    const pause = breathe();
    expect(pause).toBeInstanceOf(Promise);
    queueMicrotask(() => order.push("microtask"));
    await pause?.then(() => order.push("resumed"));
    expect(order).toEqual(["microtask", "queued before", "resumed"]);
    // The next turn counts afresh from its first step.
    clock = 7;
    expect(breathe()).toBeUndefined();
    clock = 11.9;
    expect(breathe()).toBeUndefined();
    clock = 12;
    expect(breathe()).toBeInstanceOf(Promise);
  });

  it("does not count the time the process waited between turns (a round of steps after a database wait is not cut)", async () => {
    let clock = 0;
    const breathe = breather(5, () => clock);
    expect(breathe()).toBeUndefined();
    clock = 1;
    expect(breathe()).toBeUndefined();
    // The runs wait on I/O for longer than the limit; then a round of fifty steps starts.
    await nextTurn();
    clock = 40;
    const round: (Promise<void> | undefined)[] = [];
    for (let i = 0; i < 50; i++) {
      round.push(breathe());
      clock += 0.05;
    }
    expect(round.filter((pause) => pause !== undefined)).toHaveLength(0);
  });
});
