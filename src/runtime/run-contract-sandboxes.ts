import type { AttemptRecord, StepRecord } from "../core/records.ts";
import type { ContractIsolation, ContractSandbox } from "../core/run-contract.ts";
import type { SandboxInfo, SandboxSnapshot } from "../core/sandbox.ts";

/**
 * The contract's `isolation` section (DESIGN §4, *Sandboxes*): each named sandbox of the run, from
 * its `sandbox` steps — what `ctx.sandbox` recorded, the attempts that found it lost or restored
 * it, its snapshots, and when it was destroyed.
 */
export function isolationOf(runId: string, steps: readonly StepRecord[]): ContractIsolation {
  const byName = new Map<string, ContractSandbox>();
  for (const step of [...steps].sort((a, b) => a.seq - b.seq)) {
    if (step.kind !== "sandbox") continue;
    const colon = step.name.indexOf(":");
    const call = step.name.slice(0, colon);
    const name = step.name.slice(colon + 1);
    let box = byName.get(name);
    if (call === "sandbox" && step.status === "completed") {
      const info = step.result as unknown as SandboxInfo;
      box ??= newSandbox(runId, name, info);
      box.info = info;
      addId(box, info.id);
      box.destroyedAt = null;
      box.destroyedBy = null;
      byName.set(name, box);
    }
    if (!box) continue;
    attemptsOf(box, step);
    if (step.status !== "completed") continue;
    if (call === "snapshot" || call === "release") {
      const snapshot = step.result as unknown as SandboxSnapshot;
      box.snapshots.push({ seq: step.seq, id: snapshot.id, bytes: snapshot.bytes, at: iso(step.endedAt) });
    }
    if (call === "destroy" || call === "release") {
      const cleanup = (step.args as { cleanup?: unknown } | null)?.cleanup === true;
      box.destroyedAt = iso(step.endedAt);
      box.destroyedBy = call === "release" ? "release" : cleanup ? "cleanup" : "destroy";
    } else if (call !== "sandbox") {
      box.destroyedAt = null;
      box.destroyedBy = null;
    }
  }
  const sandboxes = [...byName.values()];
  return {
    isolated: sandboxes.length === 0 ? null : sandboxes.every((s) => s.info.isolated),
    sandboxes,
  };
}

function newSandbox(runId: string, name: string, info: SandboxInfo): ContractSandbox {
  return {
    name,
    label: `${runId}/${name}`,
    info,
    ids: [],
    losses: [],
    restores: [],
    snapshots: [],
    destroyedAt: null,
    destroyedBy: null,
  };
}

/** The losses and restores its attempts record. */
function attemptsOf(box: ContractSandbox, step: StepRecord): void {
  for (const a of step.attempts as AttemptRecord[]) {
    if (a.error?.code === "SANDBOX_LOST") {
      box.losses.push({
        seq: step.seq,
        attempt: a.attempt,
        at: iso(a.endedAt ?? a.startedAt),
        message: a.error.message,
      });
    }
    const r = a.restored;
    if (r) {
      box.restores.push({
        seq: step.seq,
        attempt: a.attempt,
        at: iso(r.at),
        lost: r.lost,
        id: r.id,
        snapshot: r.snapshot,
      });
      addId(box, r.id);
    }
  }
}

function addId(box: ContractSandbox, id: string): void {
  if (box.ids.at(-1) !== id) box.ids.push(id);
}

function iso(at: number | null): string {
  return new Date(at ?? 0).toISOString();
}
