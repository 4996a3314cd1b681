import { describe, expect, it } from "vitest";
import { breather, breathe as processBreathe } from "./breather.ts";

/** A breather on clocks the test sets: `clock.now` and `clock.idle` in ms. */
function testBreather() {
  const clock = { now: 0, idle: 0 };
  const breathe = breather(5, { now: () => clock.now, idle: () => clock.idle });
  return { clock, breathe };
}

describe("breather", () => {
  it("lets the event loop turn once the process has been busy for the limit", async () => {
    const { clock, breathe } = testBreather();
    expect(breathe()).toBeUndefined();
    clock.now = 4.9;
    expect(breathe()).toBeUndefined();
    // It resolves on a turn of the event loop, after what was queued for that turn before it.
    const order: string[] = [];
    setImmediate(() => order.push("queued before"));
    clock.now = 5;
    const pause = breathe();
    expect(pause).toBeInstanceOf(Promise);
    queueMicrotask(() => order.push("microtask"));
    await pause?.then(() => order.push("resumed"));
    expect(order).toEqual(["microtask", "queued before", "resumed"]);
  });

  it("does not count the time the loop was idle (a round of steps after a database wait is not cut)", () => {
    const { clock, breathe } = testBreather();
    expect(breathe()).toBeUndefined();
    clock.now = 1;
    expect(breathe()).toBeUndefined();
    // The runs wait on I/O for longer than the limit (the loop idle); then a round of fifty steps.
    clock.now = 40;
    clock.idle = 38;
    const round: (Promise<void> | undefined)[] = [];
    for (let i = 0; i < 50; i++) {
      round.push(breathe());
      clock.now += 0.05;
    }
    expect(round.filter((pause) => pause !== undefined)).toHaveLength(0);
    // The count started with the round: 5 ms into it, the next step waits for a turn.
    clock.now = 45;
    expect(breathe()).toBeInstanceOf(Promise);
  });

  it("starts a new count for each run that waited for a turn", async () => {
    const { clock, breathe } = testBreather();
    expect(breathe()).toBeUndefined();
    clock.now = 6;
    // Two runs that never wait reach the limit: each waits for a turn, then has the limit again.
    const first = breathe();
    const second = breathe();
    expect([first, second].every((pause) => pause instanceof Promise)).toBe(true);
    await first;
    clock.now = 10;
    expect(breathe()).toBeUndefined();
    clock.now = 11;
    expect(breathe()).toBeInstanceOf(Promise);
    await second;
    clock.now = 15;
    expect(breathe()).toBeUndefined();
  });

  it("reads the process's event loop by default: busy time is counted, waiting is not", async () => {
    // Waiting on a timer leaves the loop idle: the next step starts a new count.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(processBreathe()).toBeUndefined();
    // Busy for more than the limit without a turn: the next step waits for one.
    const until = performance.now() + 6;
    while (performance.now() < until) {
      // busy
    }
    expect(processBreathe()).toBeInstanceOf(Promise);
  });
});
