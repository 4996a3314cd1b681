import type { SandboxPlace } from "../core/envelope/sandbox-slot.ts";
import type { Logger } from "../core/logger.ts";
import type { RunRecord, StepRecord } from "../core/records.ts";
import { isTerminal, type RunState } from "../core/run-state.ts";
import type { SandboxInfo } from "../core/sandbox.ts";
import { serializeError } from "../core/serialize.ts";

/**
 * The end of a run's sandboxes (DESIGN §4, *Sandboxes*): every sandbox labelled `<runId>/…` is
 * destroyed before the run's final transition, which carries a cleanup step per sandbox
 * (`destroy:<name>`, kind `sandbox`, after the journal's last seq, args `{ cleanup: true }`); and
 * the sweep that destroys the sandboxes whose run has ended, for a worker lost between the two.
 */

/** A run in `state` has ended for good: its sandboxes go (INTERRUPTED is taken up again). */
export function endsSandboxes(state: RunState): boolean {
  return isTerminal(state) && state !== "INTERRUPTED";
}

/** The run id and sandbox name of a label `<runId>/<name>` (names hold no `/`). */
export function labelParts(label: string): { runId: string; name: string } | undefined {
  const at = label.lastIndexOf("/");
  if (at <= 0 || at === label.length - 1) return undefined;
  return { runId: label.slice(0, at), name: label.slice(at + 1) };
}

/**
 * Destroys the sandboxes `run` still holds — one per name its journal's `sandbox:<name>` steps gave
 * (a step's start record is committed before its sandbox is made, so none is missed) — and returns
 * the cleanup steps recording it, numbered after the journal's last seq. A destroy that fails is
 * recorded as a failed step (the sweep tries again).
 */
export async function destroyRunSandboxes(
  place: SandboxPlace,
  run: RunRecord,
  journal: readonly StepRecord[],
  logger: Logger,
): Promise<StepRecord[]> {
  const names = new Set<string>();
  for (const step of journal) {
    if (step.kind === "sandbox" && step.name.startsWith("sandbox:")) names.add(step.name.slice("sandbox:".length));
  }
  const infos: SandboxInfo[] = [];
  for (const name of [...names].sort()) {
    const found = await place.provider.find(`${run.id}/${name}`);
    if (found) infos.push(found.info);
  }
  if (infos.length === 0) return [];
  let seq = Math.max(0, ...journal.map((s) => s.seq));
  const steps: StepRecord[] = [];
  for (const info of infos) {
    const startedAt = Date.now();
    let error: ReturnType<typeof serializeError> | undefined;
    try {
      await (await place.provider.find(info.label))?.destroy();
    } catch (cause) {
      error = serializeError(cause);
      logger.warn(
        { runId: run.id, sandbox: info.id, error: error.message },
        `could not destroy sandbox ${info.id} (label "${info.label}") of run ${run.id}`,
      );
    }
    const endedAt = Date.now();
    const name = labelParts(info.label)?.name ?? info.label;
    steps.push({
      runId: run.id,
      seq: ++seq,
      kind: "sandbox",
      name: `destroy:${name}`,
      status: error ? "failed" : "completed",
      argsDigest: "",
      args: { cleanup: true, id: info.id },
      result: error ? undefined : { id: info.id, destroyedAt: endedAt },
      error,
      attempts: [{ attempt: 1, startedAt, endedAt, ...(error ? { error } : {}) }],
      heartbeat: undefined,
      usage: undefined,
      startedAt,
      endedAt,
      epoch: run.epoch,
    });
  }
  return steps;
}

/**
 * Destroys the sandboxes whose run has ended (a worker lost between destroying them and the run's
 * end, or a run ended where no sandbox provider was configured). A label whose run this store does
 * not know is left alone: another runtime's store may share the provider's folder. Returns how
 * many it destroyed.
 */
export async function sweepEndedRunSandboxes(
  place: SandboxPlace,
  getRun: (id: string) => Promise<RunRecord | undefined>,
  logger: Logger,
): Promise<number> {
  const byRun = new Map<string, SandboxInfo[]>();
  for (const info of await place.provider.list()) {
    const runId = labelParts(info.label)?.runId;
    if (runId !== undefined) byRun.set(runId, [...(byRun.get(runId) ?? []), info]);
  }
  let destroyed = 0;
  for (const [runId, infos] of byRun) {
    const run = await getRun(runId);
    if (!run || !endsSandboxes(run.state)) continue;
    for (const info of infos) {
      await (await place.provider.find(info.label))?.destroy();
      destroyed++;
      logger.warn(
        { runId, sandbox: info.id },
        `destroyed sandbox ${info.id} (label "${info.label}"): its run ${runId} is ${run.state}`,
      );
    }
  }
  return destroyed;
}
