import type { RunExecution } from "./run-execution.ts";
import { handBack } from "./run-transitions.ts";
import type { WorkerDeps } from "./worker-options.ts";

/**
 * A worker's shutdown, once it has stopped claiming: the runs in flight get a grace period to
 * end; those still held then are stopped, their finished steps committed, and each handed back
 * INTERRUPTED (without using up its automatic recoveries) for another worker to resume.
 */

/** Waits until `held` have all ended, or `graceMs` passed. */
export async function graceOf(held: readonly RunExecution[], graceMs: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    Promise.all(held.map((execution) => execution.done)),
    new Promise((resolve) => (timer = setTimeout(resolve, graceMs))),
  ]);
  clearTimeout(timer);
}

/**
 * Records INTERRUPTED for each stopped run the worker still holds in RUNNING (reason naming the
 * worker and `why`), and releases it.
 */
export async function handBackHeld(
  scope: { readonly workerId: string; readonly deps: WorkerDeps },
  held: readonly RunExecution[],
  graceMs: number,
  why: string,
): Promise<void> {
  const { workerId, deps } = scope;
  for (const execution of held) {
    await execution.done;
    // Results of tools that finished are committed, so the next worker does not run them again.
    await execution.envelope?.flushJournal().catch(() => {});
    const run = execution.run;
    const current = await deps.backend.getRun(run.id);
    if (!current || current.epoch !== run.epoch || current.state !== "RUNNING") continue;
    await handBack(
      deps,
      workerId,
      current,
      `worker ${workerId} shut down (${why}) with the run in flight; grace of ${graceMs} ms ran out`,
    );
  }
}
