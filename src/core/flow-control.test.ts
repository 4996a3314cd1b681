import { describe, expect, it } from "vitest";
import {
  claimOrder,
  holdsSlot,
  PRIORITY_AGING_MS,
  resolveRunFlow,
  slotWait,
  validateAgentFlow,
} from "./flow-control.ts";
import type { RunRecord } from "./records.ts";

const run = (overrides: Partial<RunRecord>): RunRecord =>
  ({ id: "r", state: "PENDING", leaseOwner: null, leaseExpiresAt: null, createdAt: 0, ...overrides }) as RunRecord;

describe("resolveRunFlow", () => {
  const flow = {
    concurrency: { limit: 3 },
    priority: 1,
    workflows: { keyed: { concurrency: { limit: 2, key: (input: { customer: string }) => input.customer } } },
  };

  it("takes the agent's global limit, keyed by the agent's name", () => {
    expect(resolveRunFlow("a", "other", flow, {}, {})).toEqual({
      concurrencyKey: "a",
      concurrencyLimit: 3,
      priority: 1,
    });
  });

  it("takes a workflow's key from the input, and the run's options over both", () => {
    expect(resolveRunFlow("a", "keyed", flow, { customer: "c1" }, {})).toEqual({
      concurrencyKey: "c1",
      concurrencyLimit: 2,
      priority: 1,
    });
    expect(resolveRunFlow("a", "keyed", flow, { customer: "c1" }, { concurrencyKey: "x", priority: 0 })).toEqual({
      concurrencyKey: "x",
      concurrencyLimit: 2,
    });
  });

  it("refuses a key without a limit and a priority out of range", () => {
    expect(() => resolveRunFlow("a", "w", undefined, {}, { concurrencyKey: "k" })).toThrow(/needs a limit/);
    expect(() => resolveRunFlow("a", "w", undefined, {}, { priority: 1001 })).toThrow(/priority must be an integer/);
    expect(() => resolveRunFlow("a", "w", undefined, {}, { priority: 1.5 })).toThrow(/priority must be an integer/);
    expect(resolveRunFlow("a", "w", undefined, {}, {})).toEqual({});
  });
});

describe("validateAgentFlow", () => {
  it("refuses a limit below 1 and a workflow that does not exist", () => {
    expect(() => validateAgentFlow("a", { concurrency: { limit: 0 } }, ["w"])).toThrow(/limit must be an integer/);
    expect(() => validateAgentFlow("a", { workflows: { nope: { priority: 1 } } }, ["w"])).toThrow(/names no workflow/);
    expect(() => validateAgentFlow("a", { concurrency: { limit: 2 }, priority: 5 }, ["w"])).not.toThrow();
  });
});

describe("slots and order", () => {
  it("a run holds a slot when RUNNING (whatever its lease) or claimed under a live lease", () => {
    const keyed = { concurrencyKey: "k", concurrencyLimit: 1, leaseOwner: "w" };
    expect(holdsSlot(run({ ...keyed, state: "RUNNING", leaseExpiresAt: 5 }), 10)).toBe(true);
    expect(holdsSlot(run({ ...keyed, state: "PENDING", leaseExpiresAt: 20 }), 10)).toBe(true);
    expect(holdsSlot(run({ ...keyed, state: "PENDING", leaseExpiresAt: 5 }), 10)).toBe(false);
    expect(holdsSlot(run({ ...keyed, state: "PAUSED", leaseOwner: null }), 10)).toBe(false);
    expect(holdsSlot(run({ state: "RUNNING", leaseOwner: "w" }), 10)).toBe(false);
  });

  it("says a keyed run not yet claimed waits for a slot", () => {
    expect(slotWait(run({ concurrencyKey: "k", concurrencyLimit: 2 }), 0)).toBe(
      'waiting for a slot of key "k" (limit 2)',
    );
    expect(slotWait(run({ concurrencyKey: "k", concurrencyLimit: 2, priority: -3 }), 0)).toBe(
      'waiting for a slot of key "k" (limit 2), priority -3',
    );
    expect(slotWait(run({ concurrencyKey: "k", concurrencyLimit: 2, priority: 0 }), 0)).toBe(
      'waiting for a slot of key "k" (limit 2)',
    );
    expect(slotWait(run({}), 0)).toBeUndefined();
  });

  it("orders by priority in aging intervals, then age", () => {
    expect(claimOrder({ createdAt: 1000, priority: 2 })).toBe(1000 - 2 * PRIORITY_AGING_MS);
    expect(claimOrder({ createdAt: 1000 })).toBe(1000);
  });
});
