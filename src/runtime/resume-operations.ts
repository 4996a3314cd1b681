import type { RuntimeBackend } from "../backend/backend.ts";
import { IllegalTransitionError, LeaseLostError, RunNotResumableError } from "../core/errors.ts";
import type { Actor, RunRecord, TransitionRecord, Versions } from "../core/records.ts";
import { OWNED_STATES } from "../core/run-state.ts";
import { RESUMABLE_FAILURES } from "../core/transitions.ts";
import { isDeadLocalOwner } from "../worker/worker-id.ts";

/**
 * The client operation `resume` and its takeover rules: a run that stopped without finishing
 * goes RESUMING for a worker to replay; a run whose worker is gone (its lease lapsed, or its
 * process on this host no longer exists) is first recorded INTERRUPTED; a run a recovery sweep
 * resumed already, or one waiting for its next claim, is left as it is.
 */

/** What `resume` needs from the runtime. */
export interface ResumeOperationsHost {
  backend: RuntimeBackend;
  /** The run as stored; throws `RunNotFoundError` for an unknown id. */
  getRun(runId: string): Promise<RunRecord>;
  /** The versions a run of `agent` runs under now. */
  versions(agent: string): Versions;
  /** Tells listeners and waiters about a transition the operation made. */
  emit(transition: TransitionRecord, run: RunRecord): void;
  /** This runtime's worker, if it has one. */
  worker: { readonly id: string; poke(): void; takeOverClaim(run: RunRecord): Promise<void> } | undefined;
}

/** Options of `resume`. */
export interface ResumeOptions {
  /** @default { kind: "user", id: "local" } */
  by?: Actor;
  /** @default "resumed by <by>" */
  reason?: string;
}

/**
 * Resumes `runId` (see `Runtime.resume`): once this returns, the run is RESUMING, or already
 * taken up again, or waits for a worker's claim.
 */
export async function resumeRun(host: ResumeOperationsHost, runId: string, options: ResumeOptions): Promise<void> {
  let run = await host.getRun(runId);
  const by = options.by ?? { kind: "user", id: "local" };
  // A recovery sweep (this runtime's worker starts with one) may have resumed the run already:
  // RESUMING and not claimed yet, or claimed by this very worker. That is not a lost worker.
  const underWay = run.state === "RESUMING" || run.state === "RUNNING";
  if (underWay && (run.leaseOwner === null || run.leaseOwner === host.worker?.id)) return;
  // Reconciled or cancelled while no worker held it: it waits for the next claim, not a takeover.
  if ((run.state === "RECONCILING" || run.state === "CANCELLING") && run.leaseOwner === null) {
    host.worker?.poke();
    return;
  }
  if (run.state === "PENDING") return resumePending(host, run);
  if (OWNED_STATES.has(run.state)) {
    run = await interruptLost(host, run, by);
    // Taken over and resumed by another worker's sweep in the meantime: the resume has happened.
    if (run.state === "RESUMING" || run.state === "RUNNING") return;
  }
  await markResuming(host, run, by, options.reason);
}

/**
 * `resume` of a PENDING run: it has not started, so nothing is recorded. Unclaimed, or claimed
 * by a worker that is gone (its lease lapsed, or its process on this host no longer exists), it
 * is this runtime's worker's to claim (a dead owner's claim is taken over at once); claimed by a
 * live worker, it is refused.
 */
async function resumePending(host: ResumeOperationsHost, run: RunRecord): Promise<void> {
  const now = Date.now();
  const owner = run.leaseOwner;
  const self = host.worker?.id;
  const live = owner !== null && run.leaseExpiresAt !== null && run.leaseExpiresAt > now;
  if (live && !isDeadLocalOwner(owner) && owner !== self) {
    throw new RunNotResumableError(
      `run ${run.id} is PENDING and claimed by worker ${owner} until ${new Date(run.leaseExpiresAt ?? now).toISOString()}, which is starting it; if that worker is gone, resume again after its lease lapses`,
    );
  }
  if (live && owner !== null && owner !== self) await host.worker?.takeOverClaim(run);
  host.worker?.poke();
}

/**
 * A run in an owned state (RUNNING, CANCELLING, …) whose worker is gone is recorded INTERRUPTED
 * first; one whose worker still holds a live lease is refused. Returns the run after.
 */
async function interruptLost(host: ResumeOperationsHost, run: RunRecord, by: Actor): Promise<RunRecord> {
  const now = Date.now();
  const lapsed = run.leaseExpiresAt === null || run.leaseExpiresAt <= now;
  const dead = run.leaseOwner !== null && isDeadLocalOwner(run.leaseOwner);
  if (!lapsed && !dead) {
    throw new RunNotResumableError(
      `run ${run.id} is ${run.state} and held by worker ${run.leaseOwner} until ${new Date(run.leaseExpiresAt ?? now).toISOString()}; if that worker is gone, resume again after its lease lapses`,
    );
  }
  const result = await host.backend
    .transition({
      runId: run.id,
      from: run.state,
      to: "INTERRUPTED",
      actor: by,
      reason: `worker ${run.leaseOwner ?? "unknown"} was lost while the run was ${run.state} (${dead ? "its process is gone" : "its lease lapsed"})`,
      versions: host.versions(run.agent),
      at: now,
      fence: { takeover: { epoch: run.epoch, leaseExpiresAt: run.leaseExpiresAt } },
    })
    .catch(async (error: unknown) => {
      // A recovery sweep recorded the loss first (and may have resumed the run already): go on
      // from what it stored.
      const current = await host.getRun(run.id);
      const moved = current.epoch > run.epoch;
      if (moved && (current.state === "INTERRUPTED" || current.state === "RESUMING" || current.state === "RUNNING")) {
        return { run: current, transition: undefined };
      }
      throw error;
    });
  if (result.transition) host.emit(result.transition, result.run);
  return result.run;
}

/** Refuses a run that cannot be resumed, naming why and what to do instead. */
function checkResumable(run: RunRecord, orphan: boolean): void {
  if (run.state === "INTERRUPTED" || orphan) return;
  if (run.state === "FAILED" && RESUMABLE_FAILURES.has(run.error?.code ?? "")) return;
  throw new RunNotResumableError(
    run.state === "FAILED"
      ? `run ${run.id} FAILED with ${run.error?.code ?? run.error?.name ?? "an error"}; only a replay divergence or a version mismatch can be resumed; run it again as a new run: \`cairn rerun ${run.id}\` from its failed step (after fixing the code), or \`cairn fork ${run.id} --from-step <n>\``
      : run.state === "MOVED"
        ? `${run.error?.message ?? `run ${run.id} moved to another store`}: it cannot be resumed here`
        : run.state === "PAUSED"
          ? `run ${run.id} is PAUSED (${run.pausedReason}); it resumes by itself when what it waits for arrives (signal, answer, approve or deny it)`
          : `run ${run.id} is ${run.state}; only INTERRUPTED runs, suspended orphans and FAILED runs with REPLAY_DIVERGENCE or VERSION_MISMATCH can be resumed`,
  );
}

/** INTERRUPTED, a suspended orphan or a resumable FAILED run -> RESUMING, for a worker to claim. */
async function markResuming(host: ResumeOperationsHost, run: RunRecord, by: Actor, reason?: string): Promise<void> {
  const orphan = run.state === "PAUSED" && run.pausedReason === "suspended_orphan";
  checkResumable(run, orphan);
  const from = run.state;
  const result = await host.backend
    .transition({
      runId: run.id,
      from,
      to: "RESUMING",
      actor: by,
      reason: reason ?? `resumed by ${by.kind} ${by.id}`,
      versions: host.versions(run.agent),
      at: Date.now(),
      fence: { unowned: true, now: Date.now() },
      patch: from === "FAILED" ? { error: null } : orphan ? { clearStopRequest: true } : {},
    })
    .catch(async (error: unknown) => {
      // A worker's automatic recovery (this runtime's included, which starts with it) may have
      // resumed the INTERRUPTED run first: the only way out of INTERRUPTED is RESUMING, so the
      // resume that was asked for has happened.
      // Its claim may already hold a live lease, so the refusal can be LeaseLostError too.
      if ((error instanceof IllegalTransitionError || error instanceof LeaseLostError) && from === "INTERRUPTED") {
        if ((await host.getRun(run.id)).state !== "INTERRUPTED") return undefined;
      }
      throw error;
    });
  if (!result) return;
  host.emit(result.transition, result.run);
  host.worker?.poke();
}
