/** The flow-control roles of `InMemoryBackend`: schedules and rate limits. */
export { MemoryRateLimits } from "./memory-rate-limits.ts";
export { MemorySchedules } from "./memory-schedules.ts";
