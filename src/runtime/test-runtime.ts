import { WaitTimeoutError } from "../core/errors.ts";
import { silentLogger } from "../core/logger.ts";
import type { RunRecord } from "../core/records.ts";
import { isTerminal } from "../core/run-state.ts";
import { Runtime, type RuntimeOptions } from "./runtime.ts";
import { VirtualClock } from "./virtual-clock.ts";

/** Options of {@link TestRuntime}: those of a runtime, with the clock made virtual. */
export interface TestRuntimeOptions extends Omit<RuntimeOptions, "clock"> {
  /** Where the virtual clock starts (epoch milliseconds). @default 2026-01-01T00:00:00Z */
  startAt?: number;
}

/** States in which a run is being worked on, so a test waits rather than skipping time. */
const BUSY = new Set(["PENDING", "RUNNING", "RESUMING", "CANCELLING", "COMPENSATING", "RECONCILING"]);

/**
 * A runtime on a {@link VirtualClock}, for tests: time passes only when the test says so, and
 * `settle` skips straight to the next timer, so a workflow that sleeps for 30 days or waits for an
 * approval that expires in 48 hours runs in milliseconds. In memory and silent unless told
 * otherwise.
 *
 * @example
 * const t = new TestRuntime({ agents: [expenses] });
 * const run = await t.run(expenses, "submit", { amount: 120 });
 * const paused = await t.settle(run.id, { skipTimers: false }); // PAUSED, awaiting_approval
 * await t.approve(run.id, "w2", { by: "alice", digest });
 * expect(await run.result()).toEqual(...);
 */
export class TestRuntime extends Runtime {
  override readonly clock: VirtualClock;

  constructor(options: TestRuntimeOptions) {
    const clock = new VirtualClock(options.startAt);
    super({ logger: silentLogger, ...options, clock });
    this.clock = clock;
  }

  /**
   * Moves the virtual clock forward by `ms`, stopping at each schedule tick on the way to fire it
   * (its run is created before the clock moves on), so a year of a nightly schedule takes a few
   * seconds. Runs started are driven by the worker as usual; `settle` or `waitFor` them.
   */
  async advanceSchedules(ms: number): Promise<void> {
    const end = this.clock.now() + ms;
    for (;;) {
      await this.schedules.fireDue();
      const next = (await this.schedules.list())
        .filter((s) => !s.paused && s.nextAt !== null && (s.nextAt as number) <= end)
        .reduce<number | undefined>(
          (min, s) => Math.min(min ?? Number.POSITIVE_INFINITY, s.nextAt as number),
          undefined,
        );
      if (next === undefined) break;
      await this.clock.advanceTo(next);
    }
    await this.clock.advanceTo(end);
  }

  /**
   * Waits until the run has nothing to do but wait, skipping time to each durable timer it waits
   * on (sleeps, timeouts, expiries, retry backoffs) when `skipTimers` is on. Returns the run once
   * it has ended (a terminal state) or waits only for something a person or another run must
   * give (a signal, an answer, a decision, a child), with no timer left to skip to.
   */
  async settle(runId: string, options: { skipTimers?: boolean; timeoutMs?: number } = {}): Promise<RunRecord> {
    const skip = options.skipTimers ?? true;
    const deadline = Date.now() + (options.timeoutMs ?? 10_000);
    for (;;) {
      const run = await this.getRun(runId);
      if (isTerminal(run.state)) return run;
      if (!BUSY.has(run.state) && run.state === "PAUSED") {
        const due = (await this.waits(runId))
          .filter((w) => w.status === "open" && w.dueAt !== null)
          .map((w) => w.dueAt as number);
        if (!skip || due.length === 0) {
          // The waits were read after the run: if the run moved on in between (the worker fired
          // the timer it paused on, and the next pause's wait is not written yet), they belong to
          // a pause that is over, and the run is not settled.
          if ((await this.getRun(runId)).lastTransitionId === run.lastTransitionId) return run;
        } else {
          await this.clock.advanceTo(Math.min(...due));
          await this.fireDueTimers();
        }
      }
      if (Date.now() > deadline) {
        throw new WaitTimeoutError(
          `run ${runId} did not settle within ${options.timeoutMs ?? 10_000} ms (it is ${run.state})`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }
}
