import type { RunRecord, StopRequest, TransitionRecord, Versions } from "../../core/records.ts";

/**
 * The stops role of the storage contract: asking a run to stop, and a worker finding what it was
 * asked. Checked by `conformance/stops-conformance.ts`.
 */
export interface StopStore {
  /**
   * Asks a run to stop (cancel) or to suspend (a child whose parent ended), in one transaction —
   * see `planStop`: a PENDING run is cancelled at once, a PAUSED one moves to where a worker
   * carries the request out, a run a worker holds gets the request stored for that worker. A
   * terminal run is returned untouched.
   */
  requestStop(request: StopRunRequest): Promise<{ run: RunRecord; transitions: TransitionRecord[] }>;
  /** Ids of the runs `workerId` holds that have a stop request. */
  listStopRequested(workerId: string): Promise<string[]>;
}

/** What `requestStop` needs. */
export interface StopRunRequest {
  runId: string;
  request: StopRequest;
  versions: Versions;
}
