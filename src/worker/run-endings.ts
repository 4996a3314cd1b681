import type { AgentDefinition } from "../agent/agent.ts";
import type { InFlightStep } from "../core/envelope.ts";
import { VersionMismatchError } from "../core/errors.ts";
import type { Json, RunRecord, StepRecord } from "../core/records.ts";

/**
 * What the worker records when a run ends other than by returning: the evidence of a
 * cancellation, and the check of the workflow version a run started on.
 */

/** Where a cancelled run stopped, and what was in flight. */
export interface CancellationEvidence {
  /**
   * `before_step`: nothing was running (the run stopped between steps, or while paused);
   * `after_step`: every step in flight reached a definite outcome; `during_step`: a step was still
   * running (or was cut by a crash) and its outcome is unknown.
   */
  stopped: "before_step" | "after_step" | "during_step";
  inFlight: Json;
  /** One line for the transition's reason. */
  summary: string;
}

function summarize(stopped: CancellationEvidence["stopped"], steps: readonly InFlightStep[]): string {
  if (stopped === "before_step") return "stopped before a step (nothing in flight)";
  const list = steps.map((s) => `${s.kind} "${s.name}" (step ${s.seq}): ${s.outcome}`).join(", ");
  return stopped === "after_step"
    ? `stopped after its steps in flight ended: ${list}`
    : `stopped during a step whose outcome is unknown: ${list}`;
}

function evidence(steps: readonly InFlightStep[]): CancellationEvidence {
  const stopped =
    steps.length === 0 ? "before_step" : steps.some((s) => s.outcome === "unknown") ? "during_step" : "after_step";
  return {
    stopped,
    inFlight: steps.map((s) => ({ seq: s.seq, kind: s.kind, name: s.name, outcome: s.outcome })),
    summary: summarize(stopped, steps),
  };
}

export const cancellationEvidence = {
  /** From the steps the envelope had in flight when the cancellation began. */
  fromInFlight: (steps: readonly InFlightStep[]): CancellationEvidence => evidence(steps),
  /**
   * From the journal, when the run was not executing here (cancelled while paused, or its worker
   * was lost): a started step other than a wait was cut off, so its outcome is unknown.
   */
  fromJournal: (journal: readonly StepRecord[]): CancellationEvidence =>
    evidence(
      journal
        .filter((s) => s.status === "started" && s.kind !== "wait")
        .map((s) => ({ seq: s.seq, kind: s.kind, name: s.name, outcome: "unknown" as const })),
    ),
};

/**
 * The error of a run started on a workflow version that this code neither is nor lists in
 * `compatibleVersions`, or undefined when the code accepts it.
 */
export function versionMismatch(run: RunRecord, agent: AgentDefinition): VersionMismatchError | undefined {
  const started = run.versions.workflow;
  if (started === agent.version || agent.compatibleVersions.includes(started)) return undefined;
  return new VersionMismatchError(
    `run ${run.id} started on version ${started} of agent "${agent.name}", and the deployed code is version ${agent.version}${
      agent.compatibleVersions.length ? ` (also runs ${agent.compatibleVersions.join(", ")})` : ""
    }; deploy code that runs version ${started} (branch with ctx.patched and list it in compatibleVersions), then resume the run`,
  );
}
