import type { StepIdentity } from "../context.ts";
import { ReplayDivergenceError } from "../errors.ts";
import type { StepRecord } from "../records.ts";

const show = (s: { kind: string; name: string } | undefined) => (s ? `${s.kind} "${s.name}"` : "(nothing)");

/**
 * The error for a replay that met a different step than its history holds, with history and
 * code side by side so the change that caused it is easy to find.
 */
export function divergenceError(options: {
  runId: string;
  seq: number;
  recorded: StepRecord | undefined;
  called: StepIdentity | undefined;
  history: readonly StepRecord[];
  calls: readonly StepIdentity[];
}): ReplayDivergenceError {
  const { runId, seq, recorded, called, history, calls } = options;
  const headline = called
    ? `replay divergence in run ${runId} at step ${seq}: the history has ${show(recorded)} but the code called ${show(called)}`
    : `replay divergence in run ${runId}: the history has ${history.length} steps but the code finished after ${calls.length}; step ${seq} (${show(recorded)}) was never called`;
  const last = Math.max(seq, ...calls.map((c) => c.seq));
  const rows: string[] = [];
  const width = 34;
  rows.push(`  ${"step".padEnd(5)} ${"history".padEnd(width)} code`);
  const bySeq = new Map(history.map((s) => [s.seq, s]));
  const callsBySeq = new Map(calls.map((c) => [c.seq, c]));
  for (let i = Math.max(1, seq - 4); i <= last; i++) {
    const h = bySeq.get(i);
    const c = callsBySeq.get(i);
    const mark = i === seq ? ">" : " ";
    rows.push(`${mark} ${String(i).padEnd(5)} ${show(h).padEnd(width)} ${show(c)}`);
  }
  return new ReplayDivergenceError(
    `${headline}\n${rows.join("\n")}\nThe workflow code changed under a run that had already started. Deploy code that calls the same steps in the same order for this run, then resume it (\`cairn resume ${runId}\`); or fork it from a step before the change (\`cairn fork ${runId} --from-step <n>\`). \`cairn replay\` finds such changes before a deploy.`,
    seq,
    { history: recorded ? show(recorded) : null, called: called ? show(called) : null },
  );
}
