import type { StepIdentity } from "../core/context.ts";
import type { InFlightStep } from "../core/envelope/envelope-outcome.ts";
import { pendingCancel } from "../core/pending-cancel.ts";
import type { Json, RunRecord, StepRecord } from "../core/records.ts";

/**
 * The evidence a cancelled run's end records: where it stopped, and how each step in flight
 * ended.
 */

/** Where a cancelled run stopped, and what was in flight. */
export interface CancellationEvidence {
  /**
   * `before_step`: nothing was running (the run stopped between steps, or while paused);
   * `after_step`: every step in flight reached a definite outcome (an effect's, settled after
   * the cancel, counts); `during_step`: a step was still running (or was cut by a crash) and its
   * outcome is unknown.
   */
  stopped: "before_step" | "after_step" | "during_step";
  inFlight: Json;
  /** One line for the transition's reason. */
  summary: string;
}

/** How a step in flight at a cancellation ended: an effect step's effect says whether it happened. */
export type CancelledOutcome = "completed" | "failed" | "not_applied" | "unknown";

/** A step in flight at a cancellation; `outcome` is what the execution saw, when the journal has no row. */
export type CancelledStep = StepIdentity & { outcome?: InFlightStep["outcome"] };

function outcomeOf(step: CancelledStep, stored: StepRecord | undefined): CancelledOutcome {
  if (stored?.status === "completed" || stored?.status === "failed") return stored.status;
  if (stored?.effect?.status === "not_applied") return "not_applied";
  if (stored?.effect) return stored.effect.status === "applied" ? "completed" : "unknown";
  return step.outcome ?? "unknown";
}

/**
 * The evidence of a cancellation: `steps` were in flight when it began (or had been cut off by a
 * lost worker, or had their effect settled by it), each with its outcome as `journal` — read after
 * the cancel settled the open effects — records it.
 */
export function cancellationEvidence(
  steps: readonly CancelledStep[],
  journal: readonly StepRecord[],
): CancellationEvidence {
  const bySeq = new Map(journal.map((s) => [s.seq, s]));
  const seen = new Set<number>();
  const entries = [...steps]
    .sort((a, b) => a.seq - b.seq)
    .filter((s) => !seen.has(s.seq) && seen.add(s.seq))
    .map((s) => {
      const stored = bySeq.get(s.seq);
      return {
        seq: s.seq,
        kind: s.kind,
        name: s.name,
        outcome: outcomeOf(s, stored),
        ...(stored?.effect ? { effect: { id: stored.effect.id, status: stored.effect.status } } : {}),
      };
    });
  const stopped =
    entries.length === 0 ? "before_step" : entries.some((s) => s.outcome === "unknown") ? "during_step" : "after_step";
  const list = entries
    .map(
      (s) =>
        `${s.kind} "${s.name}" (step ${s.seq}): ${s.outcome}${s.effect ? ` (effect ${s.effect.id} ${s.effect.status})` : ""}`,
    )
    .join(", ");
  const summary =
    stopped === "before_step"
      ? "stopped before a step (nothing in flight)"
      : stopped === "after_step"
        ? `stopped after its steps in flight ended: ${list}`
        : `stopped during a step whose outcome is unknown: ${list}`;
  return { stopped, inFlight: entries, summary };
}

/**
 * The steps a cancellation found cut off in the journal, when the run was not executing here
 * (cancelled while paused or interrupted, its worker lost while cancelling, or a cancel pending
 * while an operator reconciled an effect): started steps other than waits, and those a pending
 * cancel listed (kept on the run's error while it waited for reconciliation).
 */
export function cutOffSteps(journal: readonly StepRecord[], run: RunRecord): CancelledStep[] {
  const listed = new Set(pendingCancel(run.error)?.inFlight ?? []);
  return journal.filter((s) => (s.status === "started" && s.kind !== "wait") || listed.has(s.seq));
}
