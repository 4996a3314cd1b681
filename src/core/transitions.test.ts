import { describe, expect, it } from "vitest";
import { IllegalTransitionError } from "./errors.ts";
import {
  isRunState,
  isTerminal,
  OWNED_STATES,
  PAUSED_REASONS,
  RUN_STATES,
  type RunState,
  TERMINAL_STATES,
} from "./run-state.ts";
import { assertTransition, canTransition } from "./transitions.ts";

// DESIGN §3, written out again here on purpose: the test must not read the table it checks.
const LEGAL: Record<RunState, RunState[]> = {
  // A move (`cairn export --move`) ends the source copy of a run that no worker holds.
  PENDING: ["RUNNING", "CANCELLED", "BLOCKED", "MOVED"],
  RUNNING: [
    "PAUSED",
    "COMPLETED",
    "FAILED",
    "BLOCKED",
    "INTERRUPTED",
    "CANCELLING",
    "COMPENSATING",
    "NEEDS_RECONCILIATION",
  ],
  PAUSED: ["RESUMING", "CANCELLING", "BLOCKED", "MOVED"],
  RESUMING: ["RUNNING", "CANCELLING", "COMPENSATING", "RECONCILING", "INTERRUPTED", "FAILED"],
  CANCELLING: ["CANCELLED", "COMPENSATING", "NEEDS_RECONCILIATION", "INTERRUPTED"],
  COMPENSATING: ["COMPENSATED", "FAILED", "NEEDS_RECONCILIATION", "INTERRUPTED"],
  NEEDS_RECONCILIATION: ["RECONCILING", "CANCELLED", "MOVED"],
  RECONCILING: ["RUNNING", "COMPLETED", "COMPENSATED", "FAILED", "CANCELLED", "NEEDS_RECONCILIATION", "INTERRUPTED"],
  // Cancelling an interrupted run goes through CANCELLING (a worker records what was cut off).
  INTERRUPTED: ["RESUMING", "CANCELLING", "MOVED"],
  FAILED: ["RESUMING", "MOVED"],
  COMPLETED: [],
  BLOCKED: [],
  CANCELLED: [],
  COMPENSATED: [],
  MOVED: [],
};

/** The details a legal pair needs to pass: a paused reason for PAUSED, the divergence code out of FAILED. */
function detailsFor(from: RunState, to: RunState) {
  return {
    pausedReason: to === "PAUSED" ? ("awaiting_signal" as const) : undefined,
    errorCode: from === "FAILED" ? "REPLAY_DIVERGENCE" : undefined,
  };
}

function thrown(fn: () => void): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("run states", () => {
  it("lists fifteen distinct states and seven paused reasons", () => {
    expect(new Set(RUN_STATES).size).toBe(15);
    expect(Object.keys(LEGAL).sort()).toEqual([...RUN_STATES].sort());
    expect([...PAUSED_REASONS].sort()).toEqual(
      [
        "awaiting_approval",
        "awaiting_child",
        "awaiting_retry",
        "awaiting_signal",
        "awaiting_timer",
        "awaiting_user",
        "suspended_orphan",
      ].sort(),
    );
  });

  it("has exactly the terminal states of DESIGN §3", () => {
    expect([...TERMINAL_STATES].sort()).toEqual(
      ["BLOCKED", "CANCELLED", "COMPENSATED", "COMPLETED", "FAILED", "INTERRUPTED", "MOVED"].sort(),
    );
    for (const state of RUN_STATES) {
      expect(isTerminal(state), state).toBe(TERMINAL_STATES.has(state));
    }
    expect(isTerminal("RUNNING")).toBe(false);
    expect(isTerminal("PAUSED")).toBe(false);
  });

  it("recognises state names", () => {
    expect(isRunState("RUNNING")).toBe(true);
    expect(isRunState("running")).toBe(false);
    expect(isRunState("DONE")).toBe(false);
  });
});

describe("assertTransition", () => {
  const pairs = RUN_STATES.flatMap((from) => RUN_STATES.map((to) => [from, to] as const));
  const legal = pairs.filter(([from, to]) => LEGAL[from].includes(to));
  const illegal = pairs.filter(([from, to]) => !LEGAL[from].includes(to));

  it("covers all 225 pairs, 45 of them legal", () => {
    expect(pairs).toHaveLength(225);
    expect(legal).toHaveLength(45);
  });

  it("lets every owned state become INTERRUPTED (a worker can die in each)", () => {
    for (const state of OWNED_STATES) {
      expect(canTransition(state, "INTERRUPTED"), state).toBe(true);
    }
    expect([...OWNED_STATES].sort()).toEqual(
      ["COMPENSATING", "CANCELLING", "RECONCILING", "RESUMING", "RUNNING"].sort(),
    );
  });

  it.each(legal)("allows %s -> %s", (from, to) => {
    expect(canTransition(from, to)).toBe(true);
    expect(thrown(() => assertTransition(from, to, detailsFor(from, to)))).toBeUndefined();
  });

  it.each(illegal)("refuses %s -> %s", (from, to) => {
    expect(canTransition(from, to)).toBe(false);
    const error = thrown(() => assertTransition(from, to, detailsFor(from, to)));
    expect(error).toBeInstanceOf(IllegalTransitionError);
    expect((error as IllegalTransitionError).code).toBe("ILLEGAL_TRANSITION");
    expect((error as IllegalTransitionError).from).toBe(from);
    expect((error as IllegalTransitionError).to).toBe(to);
    expect((error as Error).message).toContain(`${from} -> ${to}`);
  });

  it("says a terminal state allows nothing", () => {
    expect(() => assertTransition("COMPLETED", "RUNNING")).toThrow(/terminal/);
  });

  it("requires a paused reason for PAUSED", () => {
    const error = thrown(() => assertTransition("RUNNING", "PAUSED"));
    expect(error).toBeInstanceOf(IllegalTransitionError);
    expect((error as Error).message).toMatch(/paused reason/);
    for (const reason of PAUSED_REASONS) {
      expect(thrown(() => assertTransition("RUNNING", "PAUSED", { pausedReason: reason }))).toBeUndefined();
    }
  });

  it("rejects a paused reason on any other target state", () => {
    const error = thrown(() => assertTransition("RUNNING", "COMPLETED", { pausedReason: "awaiting_user" }));
    expect(error).toBeInstanceOf(IllegalTransitionError);
    expect((error as Error).message).toContain("awaiting_user");
    expect(() => assertTransition("PAUSED", "RESUMING", { pausedReason: "awaiting_timer" })).toThrow(
      IllegalTransitionError,
    );
  });

  it("resumes a FAILED run only after a replay divergence or a version mismatch", () => {
    expect(thrown(() => assertTransition("FAILED", "RESUMING", { errorCode: "REPLAY_DIVERGENCE" }))).toBeUndefined();
    expect(thrown(() => assertTransition("FAILED", "RESUMING", { errorCode: "VERSION_MISMATCH" }))).toBeUndefined();
    for (const errorCode of [undefined, "TOOL_FAILED", "INVALID_INPUT", "replay_divergence"]) {
      const error = thrown(() => assertTransition("FAILED", "RESUMING", { errorCode }));
      expect(error, String(errorCode)).toBeInstanceOf(IllegalTransitionError);
      expect((error as Error).message).toMatch(/fork/);
    }
  });

  it("ignores the error code for transitions that do not leave FAILED", () => {
    expect(thrown(() => assertTransition("INTERRUPTED", "RESUMING", { errorCode: "TOOL_FAILED" }))).toBeUndefined();
    expect(thrown(() => assertTransition("RESUMING", "FAILED", { errorCode: "TOOL_FAILED" }))).toBeUndefined();
  });
});
