import type { Actor, StepKind } from "./records.ts";
import type { PausedReason, RunState } from "./run-state.ts";

/**
 * Events of a run's live stream (`runtime.events`): transitions as they are recorded, the
 * attempts of steps as they start, end and are retried, and model output as it streams. Not journaled; see runtime/run-events.ts for the stream itself.
 */

/** What happened, without the stream's bookkeeping. */
export type RunEventBody =
  | {
      type: "transition";
      from: RunState | null;
      to: RunState;
      pausedReason: PausedReason | null;
      reason: string;
      actor: Actor;
    }
  /**
   * An attempt of a journaled step (tool, llm, domain, child, sandbox) begins: its start record
   * is committed and its function is called now. Replayed steps have none.
   */
  | { type: "step.start"; seq: number; attempt: number; kind: StepKind; name: string }
  /** The attempt ended; `error` (cleaned of credentials) when it failed. */
  | {
      type: "step.end";
      seq: number;
      attempt: number;
      kind: StepKind;
      name: string;
      status: "completed" | "failed";
      durationMs: number;
      error?: string;
    }
  /**
   * Attempt `attempt` failed with `error` and attempt `attempt + 1` follows after `delayMs`: in
   * memory, or with the run paused on a durable timer (`paused`). Sent when the attempt fails,
   * before the wait.
   */
  | {
      type: "step.retry";
      seq: number;
      attempt: number;
      kind: StepKind;
      name: string;
      error: string;
      delayMs: number;
      paused: boolean;
    }
  /**
   * Attempt `attempt` of step `seq` waits `waitMs` for a slot of the shared rate limit `rateLimit`
   * (`limit` calls per `periodMs`) before it begins; sent when the wait begins. The wait is in
   * process (the run stays RUNNING) and ends early if the run is cancelled.
   */
  | {
      type: "step.rate_limited";
      seq: number;
      attempt: number;
      kind: StepKind;
      name: string;
      rateLimit: string;
      limit: number;
      periodMs: number;
      waitMs: number;
    }
  /** An attempt of a model call began. */
  | { type: "model.start"; seq: number; attempt: number; model: string }
  /** Text the model produced, in order. */
  | { type: "model.text"; seq: number; attempt: number; text: string }
  /**
   * The previous attempt of step `seq` failed and another begins: clear the text it streamed
   * (the new attempt streams its own from the start).
   */
  | { type: "model.retry"; seq: number; attempt: number; error: string }
  /** The attempt ended. */
  | { type: "model.end"; seq: number; attempt: number; status: "completed" | "failed"; error?: string }
  /** Output of a sandbox command (step `seq`), in arrival order within its stream. */
  | {
      type: "sandbox.output";
      seq: number;
      attempt: number;
      sandbox: string;
      stream: "stdout" | "stderr";
      text: string;
    };

/** One event of a run's stream: `offset` counts from 0 per run, with no gaps. */
export type RunEvent = RunEventBody & { runId: string; offset: number; at: number };

/** Options of `runtime.events`. */
export interface RunEventsOptions {
  /** The first offset wanted (events before it are skipped). @default 0 */
  from?: number;
  /** Ends the iteration when it fires. */
  signal?: AbortSignal;
}
