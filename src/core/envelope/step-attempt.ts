import type { AttemptRecord, Json, SandboxRestore, StepRecord, Usage } from "../records.ts";
import { toJson } from "../serialize.ts";
import type { SpanScope } from "../telemetry/spans.ts";
import type { JournalWriter } from "./journal-writer.ts";

/** What one attempt sees of its step. */
export interface StepExecution {
  readonly seq: number;
  readonly attempt: number;
  readonly signal: AbortSignal;
  heartbeat(details?: Json): void;
  lastHeartbeat(): Json | undefined;
  addUsage(usage: { inputTokens: number; outputTokens: number; costUsd?: number }): void;
  /** The effect's idempotency key, for a step of an effect tool. */
  readonly idempotencyKey: string | undefined;
  /** Records on this attempt that it restored a lost sandbox (written with the attempt's end). */
  restored(restore: SandboxRestore): void;
  /** The attempt's span, when an OpenTelemetry SDK records it (a model call adds the GenAI attributes). */
  readonly trace?: SpanScope | undefined;
}

/** One attempt of a step: what the step's function sees through its context. */
export class Attempt implements StepExecution {
  signal: AbortSignal;
  /** Re-arms the heartbeat timeout; set by the attempt runner. */
  beat: () => void = noop;
  trace: SpanScope | undefined = undefined;
  readonly #step: StepRecord;
  readonly #record: AttemptRecord;
  readonly #writer: JournalWriter;
  readonly #limits: { label: string; maxPayloadBytes: number };
  /** The run's stop signal: once it fired, this execution writes nothing more. */
  readonly #stop: AbortSignal;
  constructor(
    step: StepRecord,
    record: AttemptRecord,
    writer: JournalWriter,
    stop: AbortSignal,
    limits: { label: string; maxPayloadBytes: number },
  ) {
    this.#step = step;
    this.#record = record;
    this.#writer = writer;
    this.signal = stop;
    this.#stop = stop;
    this.#limits = limits;
  }

  get seq(): number {
    return this.#step.seq;
  }

  get attempt(): number {
    return this.#record.attempt;
  }

  heartbeat(details?: Json): void {
    // An attempt that already ended (it timed out but its function goes on) must not overwrite
    // the details the next attempt is using; nor may one the run was stopped under (a tool that
    // ignored its signal past a cancel's grace), whose step is settled by the worker since.
    if (this.#record.endedAt !== null || this.#stop.aborted) return;
    this.#step.heartbeat =
      toJson(details ?? null, `the heartbeat details of ${this.#limits.label}`, this.#limits.maxPayloadBytes) ?? null;
    this.beat();
    this.#writer.later(this.#step, false);
  }

  lastHeartbeat(): Json | undefined {
    return this.#step.heartbeat;
  }

  get idempotencyKey(): string | undefined {
    return this.#step.effect?.idempotencyKey;
  }

  restored(restore: SandboxRestore): void {
    if (this.#record.endedAt !== null || this.#stop.aborted) return;
    this.#record.restored = restore;
  }

  addUsage(usage: { inputTokens: number; outputTokens: number; costUsd?: number }): void {
    this.#step.usage = addUsage(this.#step.usage, usage);
  }
}

function noop(): void {}

/** Adds model usage to a step's running total. */
export function addUsage(
  total: Usage | undefined,
  usage: { inputTokens: number; outputTokens: number; costUsd?: number },
): Usage {
  const cost = (total?.costUsd ?? 0) + (usage.costUsd ?? 0);
  return {
    inputTokens: (total?.inputTokens ?? 0) + usage.inputTokens,
    outputTokens: (total?.outputTokens ?? 0) + usage.outputTokens,
    modelCalls: (total?.modelCalls ?? 0) + 1,
    ...(cost > 0 || total?.costUsd !== undefined || usage.costUsd !== undefined
      ? { costUsd: Math.round(cost * 1e9) / 1e9 }
      : {}),
  };
}
