import type { StepRecord } from "../records.ts";
import { toolCall } from "./calls/tool-call.ts";
import type { CompensationOutcome } from "./envelope-outcome.ts";
import type { EnvelopeState } from "./envelope-state.ts";

/** The applied effects a compensation undoes, newest first (compensations themselves excluded). */
export function compensationTargets(steps: readonly StepRecord[]): StepRecord[] {
  return steps
    .filter(
      (s) =>
        s.kind === "tool" &&
        s.effect?.status === "applied" &&
        s.effect.compensate !== null &&
        s.effect.compensates === undefined,
    )
    .sort((a, b) => b.seq - a.seq);
}

/**
 * Undoes the run's applied effects that declare `compensate`, newest first, each compensation an
 * effect step of its own (linked by `effect.compensates`, numbered after the journal's last step).
 * The journal says what is done already: a compensation that completed is not run again; one that
 * was cut off is settled like any effect. Rejects only when the run is stopped.
 */
export async function undoEffects(x: EnvelopeState): Promise<CompensationOutcome> {
  const history = x.cursor.history;
  const targets = compensationTargets(history);
  const done = new Map(
    history.filter((s) => s.effect?.compensates !== undefined).map((s) => [s.effect?.compensates, s]),
  );
  let next = x.cursor.maxRecordedSeq;
  const undone: string[] = [];
  const failed: string[] = [];
  for (const target of targets) {
    const effect = target.effect as NonNullable<StepRecord["effect"]>;
    const declared = x.agent.tools[target.name]?.effect?.compensate;
    const tool = typeof declared === "string" ? declared : (declared?.tool ?? effect.compensate ?? "");
    const label = `${effect.id} (${target.name}) by ${tool}`;
    const recorded = done.get(target.seq);
    const seq = recorded?.seq ?? ++next;
    if (!x.agent.tools[tool]) {
      failed.push(`${label}: agent "${x.agent.name}" has no tool "${tool}"`);
      continue;
    }
    try {
      const args =
        typeof declared === "object" && declared.args ? declared.args(target.args, target.result) : target.args;
      await toolCall(x, tool, args, undefined, {
        begun: { seq, recorded: recorded?.kind === "tool" && recorded.name === tool ? recorded : undefined },
        compensates: target.seq,
      });
      undone.push(label);
    } catch (error) {
      if (x.stopped.signal.aborted) throw error;
      failed.push(`${label}: ${(error as Error)?.message ?? String(error)}`);
    }
  }
  return failed.length === 0 ? { kind: "compensated", undone } : { kind: "compensation_failed", undone, failed };
}
