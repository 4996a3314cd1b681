import { describe, expect, it } from "vitest";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import type { RuntimeBackend } from "../src/backend/backend.ts";
import type { LegacyLogger } from "../src/core/logger.ts";
import type { StepRecord } from "../src/core/records.ts";
import { forEachBackend, intercept } from "./helpers/backends.ts";
import { deferred, until } from "./helpers/runtime-helpers.ts";

/**
 * The lease is checked locally before each step's call (DESIGN §4, leases and fencing): a worker
 * whose event loop stalled past its lease after committing a step's start record must not call the
 * step, since another worker may have taken the run over and called it already. The stall is
 * played deterministically: worker A's commit of step 2's start record is acknowledged only once
 * worker B has taken the run over and finished it, and A's renewals fail meanwhile (a stalled
 * process renews nothing). Before the check, A then called step 2 a second time.
 */

/** The same agent for both workers; each tool call is logged with the worker that made it. */
function ledger(calls: string[], who: string) {
  return defineAgent({
    name: "ledger",
    tools: {
      first: defineTool({ run: () => calls.push(`${who}:first`) }),
      second: defineTool({ run: () => calls.push(`${who}:second`) }),
    },
    workflows: {
      async post(ctx) {
        await ctx.tool("first", {});
        await ctx.tool("second", {});
        return "posted";
      },
    },
  });
}

function recordingLogger(lines: string[]): LegacyLogger {
  const log = (message: string) => lines.push(message);
  return { debug: log, info: log, warn: log, error: log };
}

forEachBackend((under) => {
  describe("the lease checked before a step's call", () => {
    it("a worker that stalled past its lease after a step's start record does not call the step", async () => {
      const store = under.backend();
      const calls: string[] = [];
      const aLog: string[] = [];
      const stalled = deferred();
      const bDone = deferred();
      let stalling = false;
      const aStore: RuntimeBackend = intercept(store, {
        async saveSteps(steps: readonly StepRecord[], options) {
          await store.saveSteps(steps, options);
          const startOfSecond = steps.some((s) => s.seq === 2 && s.status === "started");
          if (!startOfSecond || stalling || calls.length !== 1) return;
          // Committed; the acknowledgement reaches A only after B took the run over and ended it.
          stalling = true;
          stalled.resolve();
          await bDone.promise;
          stalling = false;
        },
        // A stalled process does nothing else either: no renewal, no sweep, no claim.
        async renewLeases(request) {
          if (stalling) throw new Error("stalled: no renewal leaves this process");
          return store.renewLeases(request);
        },
        listExpiredLeases: async (now, limit) => (stalling ? [] : store.listExpiredLeases(now, limit)),
        listRecoverable: async (max, limit) => (stalling ? [] : store.listRecoverable(max, limit)),
        claimRun: async (request) => (stalling ? undefined : store.claimRun(request)),
        ...(store.claimRuns && {
          claimRuns: async (request: Parameters<NonNullable<RuntimeBackend["claimRuns"]>>[0]) =>
            stalling ? [] : (store.claimRuns?.(request) ?? []),
        }),
      });
      const a = under.runtimes.make({
        agents: [ledger(calls, "A")],
        backend: aStore,
        logger: recordingLogger(aLog),
        worker: { leaseMs: 300, pollIntervalMs: 100 },
      });
      const run = await a.run("ledger", "post", {});
      await stalled.promise;
      expect(calls).toEqual(["A:first"]);

      const b = under.runtimes.make({
        agents: [ledger(calls, "B")],
        backend: store,
        worker: { leaseMs: 300, pollIntervalMs: 50 },
      });
      const ended = await b.waitFor(run.id, { timeoutMs: 15_000 });
      expect(ended.state).toBe("COMPLETED");
      expect(calls).toEqual(["A:first", "B:second"]);
      bDone.resolve();

      // A wakes: its lease is long gone by its own clock; it renews first, is told it lost the
      // run, and stops without calling the step.
      await until(() => aLog.some((line) => line.includes(`lease on run ${run.id} ran low before a step`)), {
        what: "A to check its lease",
      });
      // Room for a misbehaving A to call it (it would do so at once).
      await new Promise((r) => setTimeout(r, 200));
      expect(calls).toEqual(["A:first", "B:second"]);
      const transitions = await store.listTransitions(run.id);
      expect(transitions.filter((t) => t.to === "COMPLETED")).toHaveLength(1);
      expect(transitions.at(-1)?.actor.id).toBe(b.workerId);
    });
  });
});
