import type { RuntimeBackend } from "../backend/backend.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
import type { Clock } from "../core/clock.ts";
import type { EnvelopeHost } from "../core/envelope/envelope-host.ts";
import type { SandboxPlace } from "../core/envelope/sandbox-slot.ts";
import type { WorkflowEnvelope } from "../core/envelope/workflow-envelope.ts";
import type { Logger } from "../core/logger.ts";
import type { RunRecord, TransitionRecord, Versions } from "../core/records.ts";
import { DEFAULT_MAX_AUTO_RECOVERIES } from "../core/run-state.ts";

/**
 * Runs one worker drives at once when it is not told (DESIGN §4, *Worker concurrency*): chosen by
 * `npm run bench:concurrency` (the smallest concurrency of its sweep with at least 80% of the best
 * throughput of steps that return at once, and half of the best of steps that wait, on SQLite and
 * PostgreSQL).
 */
export const DEFAULT_WORKER_CONCURRENCY = 64;

/** Options of the in-process worker. */
export interface WorkerOptions {
  /** Runs driven at once by this worker. @default 64 ({@link DEFAULT_WORKER_CONCURRENCY}) */
  concurrency?: number;
  /** How long a claim lasts without renewal; a crashed worker's runs are recovered after this. @default 15000 */
  leaseMs?: number;
  /**
   * How often to look for runs started elsewhere and for lapsed leases. With a backend that sends
   * wake-ups (`subscribe`) this is only the fallback.
   * @default 500, or 2000 when the backend sends wake-ups
   */
  pollIntervalMs?: number;
  /**
   * Automatic recovery of INTERRUPTED runs: each run is resumed at most this many times without
   * an outside `resume`, so a run that crashes its process every time stays INTERRUPTED.
   * @default 3
   */
  maxAutoRecoveries?: number;
  /**
   * Treat a lease as lapsed at once when its owner is a process on this host that no longer
   * exists (checked with signal 0), instead of waiting for the lease to run out.
   * @default true
   */
  detectDeadLocalOwners?: boolean;
  /**
   * How long a cancelled run's steps in flight get to stop after their `AbortSignal` fired before
   * the run is recorded CANCELLED with their outcome unknown.
   * @default 5000
   */
  cancelGraceMs?: number;
}

/** The worker's options with their defaults filled in. */
export type WorkerSettings = Required<WorkerOptions>;

/** What the worker needs from the runtime. */
export interface WorkerDeps {
  backend: RuntimeBackend;
  logger: Logger;
  agent(name: string): AgentDefinition | undefined;
  /** The agents this worker can run: it claims runs of these only. */
  agentNames: readonly string[];
  /** The envelope host of a run; `holdLease` is the worker's lease check before a step's call. */
  host(run: RunRecord, envelope: () => WorkflowEnvelope, holdLease?: EnvelopeHost["holdLease"]): EnvelopeHost;
  /** The versions a run of `agent` runs under now. */
  versions(agent: string): Versions;
  onTransition(transition: TransitionRecord, run: RunRecord): void;
  /** The clock of timers and wait timeouts. */
  clock: Clock;
  /** A new run id (for a `continueAsNew` successor). */
  newRunId(): string;
  /** The runtime's sandboxes: a run's are destroyed when it ends, orphans by the sweep. */
  sandbox?: SandboxPlace | undefined;
}

/** Fills in the defaults of `options`; a lease under 100 ms is refused. */
export function workerSettings(options: WorkerOptions, backend: RuntimeBackend): WorkerSettings {
  const leaseMs = options.leaseMs ?? 15_000;
  if (!(leaseMs >= 100)) throw new RangeError(`worker.leaseMs must be at least 100 (got ${leaseMs})`);
  return {
    concurrency: options.concurrency ?? DEFAULT_WORKER_CONCURRENCY,
    leaseMs,
    // With wake-ups from the backend, polling is only the fallback.
    pollIntervalMs: options.pollIntervalMs ?? (backend.subscribe ? 2000 : 500),
    maxAutoRecoveries: options.maxAutoRecoveries ?? DEFAULT_MAX_AUTO_RECOVERIES,
    detectDeadLocalOwners: options.detectDeadLocalOwners ?? true,
    cancelGraceMs: options.cancelGraceMs ?? 5000,
  };
}
