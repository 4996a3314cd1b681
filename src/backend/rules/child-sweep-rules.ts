import type { RunRecord, WaitRecord } from "../../core/records.ts";
import { childEnding, hasEnded, Plan, resolveInPlan, SYSTEM } from "./plan.ts";

/** The rules of the sweep of child waits, shared by every backend (see `wait-rules.ts`). */

/** The note on a child wait that the sweep resolved (see {@link planChildSweep}). */
export const SWEPT_NOTE = "found open by the sweep of child waits after the child had ended";

/**
 * The sweep of child waits (`resolveEndedChildWaits`), for one run: the backend loads the run
 * (locked), its open child waits and the child runs they name. A child's end resolves its
 * parent's wait in the same transaction (`planEnd`); a wait still open once its child has ended
 * was missed (a race, a store that lost the write), and nothing else would ever resolve it. Each
 * such wait is resolved here as the child's end would have resolved it, with a note saying the
 * sweep found it, and a PAUSED run goes RESUMING (one transition however many waits), its reason
 * naming the child. A run that has ended keeps its waits as its end left them; a wait whose child
 * has not ended (INTERRUPTED included: it is resumed) or does not exist is left open.
 */
export function planChildSweep(input: {
  run: RunRecord;
  waits: readonly WaitRecord[];
  children: readonly RunRecord[];
  at: number;
}): { plan: Plan; resolved: WaitRecord[] } {
  const { run, at } = input;
  const plan = new Plan();
  const resolved: WaitRecord[] = [];
  if (hasEnded(run.state)) return { plan, resolved };
  const waits = input.waits
    .filter((w) => w.runId === run.id && w.kind === "child" && w.status === "open")
    .sort((a, b) => a.seq - b.seq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  for (const wait of waits) {
    const child = input.children.find((c) => c.id === wait.name);
    if (!child || !hasEnded(child.state)) continue;
    resolved.push(
      resolveInPlan(
        plan,
        run,
        wait,
        { outcome: "child_ended", value: childEnding(child), note: SWEPT_NOTE, at },
        {
          actor: SYSTEM,
          reason: `child run ${child.id} ended ${child.state}; its wait ${wait.id} was still open, resolved by the sweep of child waits`,
          versions: run.versions,
        },
      ),
    );
  }
  return { plan, resolved };
}
