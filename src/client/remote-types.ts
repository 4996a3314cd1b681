import type { AgentInfo, PrincipalInfo, RunPage } from "../api/responses.ts";
import type { FeedReadyData, RunEndData, TransitionEventData } from "../api/stream-events.ts";
import type { RunEvent } from "../core/events.ts";
import type { RunRecord, StepRecord, TransitionRecord, WaitRecord } from "../core/records.ts";
import type { PausedReason, RunState } from "../core/run-state.ts";

/**
 * What `CairnClient` takes and gives besides the records: its filters, pages, events and run
 * handles. The bodies the server answers with are the HTTP API's own types (`api/`), named here
 * as the client calls them.
 */

/** A filter of `CairnClient.listRuns`. */
export interface RemoteRunFilter {
  agent?: string;
  workflow?: string;
  state?: RunState | readonly RunState[];
  pausedReason?: PausedReason;
  /** Created at or after (epoch ms). */
  since?: number;
  /** Created at or before (epoch ms). */
  until?: number;
  /** 1..200. @default 50 */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

/** One page of runs, newest first (`nextCursor` null when there are no more). */
export interface RemoteRunPage extends RunPage {}

/** Who the token is. */
export interface RemotePrincipal extends PrincipalInfo {}

/** An agent the server knows. */
export interface RemoteAgent extends AgentInfo {}

/** Everything recorded about a run (as `runtime.history`). */
export interface RemoteRunHistory {
  run: RunRecord;
  transitions: TransitionRecord[];
  steps: StepRecord[];
  waits: WaitRecord[];
}

/** An event of a run's stream or of the all-runs stream; `id` resumes after it (`from`). */
export type RemoteEvent =
  | { id: string; type: "transition"; data: TransitionEventData }
  | { id: string; type: "step"; data: StepRecord }
  | {
      id: string;
      type:
        | "step.start"
        | "step.end"
        | "step.retry"
        | "step.rate_limited"
        | "model.start"
        | "model.text"
        | "model.retry"
        | "model.end"
        | "sandbox.output";
      data: RunEvent;
    }
  | { id: string; type: "end"; data: RunEndData }
  | { id: string; type: "ready"; data: FeedReadyData };

/** Options of the event streams. */
export interface RemoteEventsOptions {
  /** The id of the last event seen: the stream resumes after it (sent as Last-Event-ID). */
  from?: string;
  /** Ends the iteration when it fires. */
  signal?: AbortSignal;
  /** Reconnections tried in a row after the connection drops, before giving up. @default 5 */
  reconnects?: number;
}

/** A run started through the client; `Output` is the workflow's output type when the client is typed with its agents. */
export interface RemoteRunHandle<Output = unknown> {
  readonly id: string;
  /** False when the key named a run that existed. */
  readonly created: boolean;
  /** The run as the start left it. */
  readonly run: RunRecord;
  /**
   * Waits until the run settles and returns its output; a run that did not complete throws
   * `RunEndedError`. Waits through automatic recovery, as `CairnClient.waitFor`.
   */
  result(options?: { timeoutMs?: number; pollIntervalMs?: number; maxAutoRecoveries?: number }): Promise<Output>;
}
