/**
 * `cairn/testing/conformance`: the conformance suite a custom backend proves itself with. Needs
 * Vitest (it registers `describe` blocks).
 * @example
 * import { runBackendConformance } from "cairn/testing/conformance";
 * runBackendConformance("my-backend", () => new MyBackend());
 * @module cairn/testing/conformance
 */
export { type BackendConformanceOptions, runBackendConformance } from "./backend/conformance/backend-conformance.ts";
