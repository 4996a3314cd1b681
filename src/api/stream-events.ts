import type { RunRecord, TransitionRecord } from "../core/records.ts";
import type { PausedReason, RunState } from "../core/run-state.ts";

/**
 * The data of the events the HTTP API's live streams send (`GET /api/runs/:id/events`,
 * `GET /api/events`; see `server/routes.ts`). `step` events carry a `StepRecord` and `model.*`
 * events a `RunEvent`, as the runtime has them.
 */

/** A transition as the streams send it: the record plus the run's new state, agent and workflow. */
export type TransitionEventData = TransitionRecord & { state: RunRecord["state"]; agent: string; workflow: string };

/** The data of `end`, a run stream's last event: the run settled. */
export interface RunEndData {
  runId: string;
  state: RunState;
  pausedReason: PausedReason | null;
}

/** The data of `ready`, the all-runs stream's first event: false when a Last-Event-ID could not be resumed. */
export interface FeedReadyData {
  resumed: boolean;
}
