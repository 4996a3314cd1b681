/**
 * `cairn/testing`: helpers for testing Cairn agents under any test runner (Vitest, Jest,
 * `node:test`): a runtime on a virtual clock, where days of timers pass in milliseconds.
 * The backend conformance suite, which needs Vitest, is `cairn/testing/conformance`.
 * @example
 * import { TestRuntime } from "cairn/testing";
 * const rt = new TestRuntime({ agents: [myAgent] });
 * @module cairn/testing
 */

export {
  type RecordedHistory,
  type ReplayHistoriesOptions,
  type ReplayReport,
  type ReplayResult,
  replayHistories,
} from "./runtime/replay-histories.ts";
export { TestRuntime, type TestRuntimeOptions } from "./runtime/test-runtime.ts";
export { VirtualClock } from "./runtime/virtual-clock.ts";
