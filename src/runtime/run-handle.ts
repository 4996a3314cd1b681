import { RunEndedError } from "../core/errors.ts";
import type { RunRecord } from "../core/records.ts";

/** What a handle needs from the runtime. */
export interface RunHandleHost {
  getRun(runId: string): Promise<RunRecord>;
  waitFor(runId: string, options?: { timeoutMs?: number }): Promise<RunRecord>;
}

/**
 * A started (or found) run. `result()` waits for the run to end and returns its output, or
 * throws a {@link RunEndedError} whose `code` says how it ended (RUN_FAILED, RUN_BLOCKED,
 * RUN_INTERRUPTED, RUN_CANCELLED, RUN_COMPENSATED, RUN_NEEDS_RECONCILIATION).
 */
export class RunHandle<Output = unknown> {
  readonly id: string;
  /** False when `run` found an existing run for the key instead of creating one. */
  readonly created: boolean;
  readonly #host: RunHandleHost;

  constructor(host: RunHandleHost, id: string, created: boolean) {
    this.#host = host;
    this.id = id;
    this.created = created;
  }

  /** The run as stored now. */
  state(): Promise<RunRecord> {
    return this.#host.getRun(this.id);
  }

  /**
   * Waits for a terminal state; returns the output of a COMPLETED run, throws otherwise. A run
   * that continued as new (`ctx.continueAsNew`) is followed to the end of its chain unless
   * `followContinuations` is false.
   */
  async result(options: { timeoutMs?: number; followContinuations?: boolean } = {}): Promise<Output> {
    let run = await this.#host.waitFor(this.id, options);
    while (run.state === "COMPLETED" && run.continuedTo && options.followContinuations !== false) {
      run = await this.#host.waitFor(run.continuedTo, options);
    }
    if (run.state === "COMPLETED") return run.output as Output;
    throw new RunEndedError({
      runId: run.id,
      state: run.state as
        | "FAILED"
        | "BLOCKED"
        | "INTERRUPTED"
        | "CANCELLED"
        | "COMPENSATED"
        | "NEEDS_RECONCILIATION"
        | "MOVED",
      error: run.error,
    });
  }
}
