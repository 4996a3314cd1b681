/**
 * The HTTP API's wire contract in one module, for code that speaks it from outside this package's
 * Node side — the dashboard imports from `src/` through this file only. What a response carries
 * (the records as stored, the run states, the bodies, the live events' data, the error body), the
 * roles, and the reader of the event streams. Everything here is types or pure values: no Node
 * API, nothing that does I/O.
 */

export { durationAgo, durationUntil, elapsed, inUnits } from "../core/durations.ts";
export type { SerializedError } from "../core/errors.ts";
export { slotWait } from "../core/flow-control.ts";
export { describeRateLimit } from "../core/rate-limits.ts";
export type {
  Actor,
  EffectRecord,
  Json,
  RunRecord,
  StepRecord,
  TransitionRecord,
  WaitRecord,
} from "../core/records.ts";
export {
  isSettled,
  PAUSED_REASONS,
  type PausedReason,
  RUN_STATES,
  type RunState,
  TERMINAL_STATES,
} from "../core/run-state.ts";
export type { ApiErrorBody, ApiErrorCode, ServerErrorCode } from "./error-body.ts";
export type {
  AgentInfo,
  EffectEntry,
  PrincipalInfo,
  RunPage,
  ScheduleInfo,
  ScheduleTrigger,
} from "./responses.ts";
export { type Permission, ROLE_PERMISSIONS, ROLES, type Role } from "./roles.ts";
export { type RawSseEvent, readSse } from "./sse-reader.ts";
export type { FeedReadyData, RunEndData, TransitionEventData } from "./stream-events.ts";
