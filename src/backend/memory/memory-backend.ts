import { InvalidInputError, LeaseLostError } from "../../core/errors.ts";
import type { RunRecord, StepRecord, TransitionRecord } from "../../core/records.ts";
import { OWNED_STATES } from "../../core/run-state.ts";
import type {
  ClaimRequest,
  CreateRunInput,
  RenewRequest,
  RunFilter,
  RuntimeBackend,
  TransitionRequest,
  Wake,
} from "../backend.ts";
import { applyTransition, claimed, isClaimable, pendingRun, wakeFor } from "../transition-rules.ts";

/**
 * Keeps everything in this process's memory: for tests and quick starts. Nothing survives the
 * process. The default backend when a `Runtime` is given none.
 */
export class InMemoryBackend implements RuntimeBackend {
  readonly name = "memory";
  readonly #runs = new Map<string, RunRecord>();
  readonly #keys = new Map<string, string>();
  readonly #transitions = new Map<string, TransitionRecord[]>();
  readonly #steps = new Map<string, Map<number, StepRecord>>();
  readonly #listeners = new Set<(wake: Wake) => void>();

  async init(): Promise<void> {}
  async close(): Promise<void> {}

  async createRun(input: CreateRunInput): Promise<{ run: RunRecord; created: boolean }> {
    const keyId = input.key === null ? null : `${input.agent}\u0000${input.workflow}\u0000${input.key}`;
    if (keyId !== null) {
      const existing = this.#keys.get(keyId);
      if (existing) return { run: { ...(this.#runs.get(existing) as RunRecord) }, created: false };
    }
    if (this.#runs.has(input.id))
      throw new InvalidInputError(`run id "${input.id}" already exists; run ids must be unique`);
    const { run, transition } = pendingRun(input);
    this.#runs.set(run.id, run);
    if (keyId !== null) this.#keys.set(keyId, run.id);
    this.#transitions.set(run.id, [transition]);
    this.#wake({ kind: "runnable", runId: run.id });
    this.#steps.set(run.id, new Map());
    return { run: { ...run }, created: true };
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const run = this.#runs.get(runId);
    return run ? { ...run } : undefined;
  }

  async listRuns(filter: RunFilter = {}): Promise<RunRecord[]> {
    const states = filter.state === undefined ? undefined : new Set([filter.state].flat());
    const all = [...this.#runs.values()]
      .filter(
        (r) =>
          (filter.agent === undefined || r.agent === filter.agent) &&
          (filter.workflow === undefined || r.workflow === filter.workflow) &&
          (states === undefined || states.has(r.state)),
      )
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1));
    const offset = filter.offset ?? 0;
    return all.slice(offset, offset + (filter.limit ?? 100)).map((r) => ({ ...r }));
  }

  async claimRun(request: ClaimRequest): Promise<RunRecord | undefined> {
    // Map order is insertion order: oldest run first, as the contract asks.
    const candidates = request.runId === undefined ? this.#runs.values() : [this.#runs.get(request.runId)];
    for (const run of candidates) {
      if (run && isClaimable(run, request.now, request.agents)) {
        const next = claimed(run, request.workerId, request.now, request.leaseMs);
        this.#runs.set(run.id, next);
        return { ...next };
      }
    }
    return undefined;
  }

  async renewLeases(request: RenewRequest): Promise<string[]> {
    const lost: string[] = [];
    for (const { runId, epoch } of request.runs) {
      const run = this.#runs.get(runId);
      if (!run || run.epoch !== epoch || run.leaseOwner !== request.workerId) {
        lost.push(runId);
        continue;
      }
      this.#runs.set(runId, { ...run, leaseExpiresAt: request.now + request.leaseMs });
    }
    return lost;
  }

  async listExpiredLeases(now: number, limit: number): Promise<RunRecord[]> {
    return [...this.#runs.values()]
      .filter((r) => OWNED_STATES.has(r.state) && r.leaseExpiresAt !== null && r.leaseExpiresAt <= now)
      .sort((a, b) => (a.leaseExpiresAt as number) - (b.leaseExpiresAt as number))
      .slice(0, limit)
      .map((r) => ({ ...r }));
  }

  async listRecoverable(maxRecoveries: number, limit: number): Promise<RunRecord[]> {
    return [...this.#runs.values()]
      .filter((r) => r.state === "INTERRUPTED" && r.recoveries < maxRecoveries)
      .sort((a, b) => a.updatedAt - b.updatedAt)
      .slice(0, limit)
      .map((r) => ({ ...r }));
  }

  async transition(request: TransitionRequest): Promise<{ run: RunRecord; transition: TransitionRecord }> {
    const result = applyTransition(this.#runs.get(request.runId), request);
    this.#runs.set(result.run.id, result.run);
    (this.#transitions.get(result.run.id) as TransitionRecord[]).push(result.transition);
    const wake = wakeFor(result.run.id, result.run.state);
    if (wake) this.#wake(wake);
    return { run: { ...result.run }, transition: result.transition };
  }

  async listTransitions(runId: string): Promise<TransitionRecord[]> {
    return [...(this.#transitions.get(runId) ?? [])];
  }

  async saveSteps(steps: readonly StepRecord[], options: { epoch: number; sync: boolean }): Promise<void> {
    const first = steps[0];
    if (!first) return;
    const run = this.#runs.get(first.runId);
    if (!run) throw new LeaseLostError(`run ${first.runId} does not exist; step ${first.seq} not saved`);
    if (run.epoch !== options.epoch) {
      throw new LeaseLostError(
        `run ${first.runId}: step ${first.seq} under lease epoch ${options.epoch} refused, the run is at epoch ${run.epoch}; this worker lost the run`,
      );
    }
    const stored = this.#steps.get(first.runId) as Map<number, StepRecord>;
    for (const step of steps) {
      if (step.runId !== first.runId) throw new InvalidInputError("saveSteps takes the steps of one run");
      stored.set(step.seq, { ...step, attempts: step.attempts.map((a) => ({ ...a })), epoch: options.epoch });
    }
  }

  async subscribe(listener: (wake: Wake) => void): Promise<() => Promise<void>> {
    this.#listeners.add(listener);
    return async () => {
      this.#listeners.delete(listener);
    };
  }

  /** After the write, like a commit: listeners run on a later tick, never inside the caller's write. */
  #wake(wake: Wake): void {
    if (this.#listeners.size === 0) return;
    queueMicrotask(() => {
      for (const listener of this.#listeners) listener(wake);
    });
  }

  async loadSteps(runId: string): Promise<StepRecord[]> {
    const steps = this.#steps.get(runId);
    if (!steps) return [];
    return [...steps.values()]
      .sort((a, b) => a.seq - b.seq)
      .map((s) => ({ ...s, attempts: s.attempts.map((a) => ({ ...a })) }));
  }
}
