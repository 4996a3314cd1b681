import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RuntimeBackend } from "../backend.ts";
import { describeChildWaitSweep } from "./child-wait-sweep-conformance.ts";
import { describeEffects } from "./effects-conformance.ts";
import { describeEndings } from "./endings-conformance.ts";
import { describeFlowControl } from "./flow-conformance.ts";
import { describeForks } from "./forks-conformance.ts";
import { describeImports } from "./imports-conformance.ts";
import { describeJournal } from "./journal-conformance.ts";
import { describeLeases } from "./leases-conformance.ts";
import { describePrune } from "./prune-conformance.ts";
import { describeRateLimits } from "./rate-limits-conformance.ts";
import { describeRuns } from "./runs-conformance.ts";
import { describeSchedules } from "./schedules-conformance.ts";
import { describeSignals } from "./signals-conformance.ts";
import { describeStops } from "./stops-conformance.ts";
import { describeTransitionFeed } from "./transition-feed-conformance.ts";
import { describeTransitions } from "./transitions-conformance.ts";
import { describeUsage } from "./usage-conformance.ts";
import { describeWaitResolution } from "./wait-resolution-conformance.ts";
import { describeWaits } from "./waits-conformance.ts";
import { describeWakeUps } from "./wake-ups-conformance.ts";

/** Options of {@link runBackendConformance}. */
export interface BackendConformanceOptions<B extends RuntimeBackend = RuntimeBackend> {
  /**
   * Called after each test, once the backend is closed: delete its files, drop its schema.
   * @default nothing
   */
  cleanup?: (backend: B) => Promise<void>;
  /**
   * Whether the backend implements the optional `subscribe()` (wake-ups): its tests run, or the
   * suite checks that it is absent.
   * @default false
   */
  wakeUps?: boolean;
  /**
   * Whether the backend implements the optional global transition feed (`listTransitionsSince`
   * and `latestTransitionCursor`): its tests run, or the suite checks that both are absent.
   * @default false
   */
  transitionFeed?: boolean;
  /**
   * Whether the backend holds schedules and rate limits (the optional `schedules` and `rateLimits`
   * roles): their tests run, or the suite checks that they are absent.
   * @default false
   */
  schedules?: boolean;
}

/**
 * Registers the `RuntimeBackend` conformance suite (Vitest `describe`/`it` blocks) for one
 * backend. Every test gets a fresh, empty backend from `makeBackend`; the suite calls `init()`
 * on it before the test and `close()` after, then `options.cleanup`. A backend that passes agrees
 * with `InMemoryBackend` on every point of the contract: run creation and key idempotency,
 * listing, exclusive claims and leases, fenced transitions and steps, waits and signals, stop
 * requests, what a run's end does to its waits, its parent, its children and its successor, the
 * sweep of child waits an end left open, effect records on steps (and steps written with a
 * transition), RECONCILING runs, a run's usage and an operator's acceptance, forks and their lineage, the pruning of ended runs; and, when it has
 * them, wake-ups and the global transition feed.
 *
 * @example
 * import { runBackendConformance } from "cairn/testing/conformance";
 * import { MyBackend } from "./my-backend.ts";
 *
 * runBackendConformance("my-backend", () => new MyBackend({ url: process.env.TEST_DB }), {
 *   cleanup: (backend) => backend.dropEverything(),
 * });
 */
export function runBackendConformance<B extends RuntimeBackend>(
  name: string,
  makeBackend: () => Promise<B> | B,
  options: BackendConformanceOptions<B> = {},
): void {
  describe(`RuntimeBackend conformance: ${name}`, () => {
    let current: B | undefined;
    const use = (): B => {
      if (!current) throw new Error(`conformance suite "${name}": no backend, makeBackend() or init() failed`);
      return current;
    };

    beforeEach(async () => {
      const backend = await makeBackend();
      await backend.init();
      current = backend;
    });

    afterEach(async () => {
      const backend = current;
      current = undefined;
      if (!backend) return;
      await backend.close();
      await options.cleanup?.(backend);
    });

    describeRuns(use);
    describeLeases(use);
    describeFlowControl(use);
    describeTransitions(use);
    describeJournal(use);
    describeWaits(use);
    describeWaitResolution(use);
    describeSignals(use);
    describeStops(use);
    describeEndings(use);
    describeChildWaitSweep(use);
    describeEffects(use);
    describeUsage(use);
    describeForks(use);
    describeImports(use);
    describePrune(use);
    if (options.wakeUps) {
      describeWakeUps(use);
    } else {
      it("has no subscribe(): workers poll it", () => {
        expect(use().subscribe).toBeUndefined();
      });
    }
    if (options.schedules) {
      describeSchedules(use);
      describeRateLimits(use);
    } else {
      it("has no schedules or rate limits roles: it cannot hold them", () => {
        expect(use().schedules).toBeUndefined();
        expect(use().rateLimits).toBeUndefined();
      });
    }
    if (options.transitionFeed) {
      describeTransitionFeed(use);
    } else {
      it("has no transition feed: the server polls its runs", () => {
        expect(use().listTransitionsSince).toBeUndefined();
        expect(use().latestTransitionCursor).toBeUndefined();
      });
    }
  });
}
