import type { Actor, Json, RunRecord, SignalRecord, TransitionRecord, Versions } from "../../core/records.ts";

/**
 * The signals role of the storage contract: a run's inbox. Checked by
 * `conformance/signals-conformance.ts`.
 */
export interface SignalStore {
  /**
   * Puts a signal in the run's inbox, or says it is a duplicate when the run's inbox already holds
   * `messageId` (nothing is written then). A new signal resolves the run's oldest open signal wait
   * of that name (and a PAUSED run goes RESUMING); with none, it stays in the inbox for a later
   * wait. A run that has ended (a terminal state other than INTERRUPTED) takes no signal
   * (`RunNotOpenError`); an interrupted run keeps its inbox.
   */
  deliverSignal(request: SignalRequest): Promise<SignalResult>;
  /** The run's inbox, oldest first. */
  listSignals(runId: string): Promise<SignalRecord[]>;
}

/** What `deliverSignal` needs. */
export interface SignalRequest {
  runId: string;
  name: string;
  payload: Json;
  messageId: string;
  actor: Actor;
  versions: Versions;
  at: number;
  /**
   * Unread signals the run's inbox may hold: a signal no open wait takes is refused with
   * `SignalInboxFullError` when the inbox holds that many already (nothing is written). The
   * backend then loads the count (`planSignal`'s `unread`). @default no limit
   */
  maxUnread?: number;
}

/** What `deliverSignal` did. */
export interface SignalResult {
  /** The inbox held this message id already: nothing was delivered. */
  duplicate: boolean;
  signal: SignalRecord;
  /** The wait it resolved, if one was open. */
  deliveredTo: string | null;
  run: RunRecord;
  transition: TransitionRecord | undefined;
}
