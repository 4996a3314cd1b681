/**
 * `cairn/testing`: helpers for testing Cairn code and custom backends. Needs Vitest.
 * @example
 * import { runBackendConformance } from "cairn/testing";
 * runBackendConformance("my-backend", () => new MyBackend());
 */
export { type BackendConformanceOptions, runBackendConformance } from "./backend/conformance/backend-conformance.ts";
export { TestRuntime, type TestRuntimeOptions } from "./runtime/test-runtime.ts";
export { VirtualClock } from "./runtime/virtual-clock.ts";
