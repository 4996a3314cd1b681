import { type ZodType, z } from "zod";
import { approvalDigest } from "../approval-digest.ts";
import type { ApprovalDecision, ApprovalRequest, AskOptions } from "../context.ts";
import {
  ApprovalDeniedError,
  ApprovalExpiredError,
  InvalidDefinitionError,
  RunEndedError,
  type SerializedError,
  WaitTimeoutError,
} from "../errors.ts";
import { type HistoryMeter, jsonBytes } from "../history-meter.ts";
import type { Json, RunRecord, StepRecord, WaitKind, WaitRecord, WaitResolution } from "../records.ts";
import type { PausedReason } from "../run-state.ts";
import { toJson } from "../serialize.ts";
import { storableText } from "../text.ts";
import { describeWait } from "../wait-description.ts";
import type { EnvelopeHost } from "./envelope-host.ts";
import type { JournalWriter } from "./journal-writer.ts";
import type { BegunStep } from "./replay-cursor.ts";

/**
 * The wait steps of a workflow (`ctx.waitForSignal`, `askUser`, `sleep`, `requestApproval`,
 * `child.result()`, and a tool's long retry backoff). A wait is a journaled step whose result is
 * the wait's resolution. A wait that is not resolved yet leaves its promise pending; when every
 * step the workflow is running is such a wait, the envelope ends its execution as `paused` and
 * the worker pauses the run (the envelope leaves memory; the run comes back by replay).
 */

/** What a kind of wait needs: its identity, what it stores, and how its resolution reaches the workflow. */
export interface WaitSpec<T> {
  kind: WaitKind;
  /** The wait's name (signal name, question, action, child run id). */
  name: string;
  /** The step's name, checked on replay. */
  stepName: string;
  args: Json;
  details: Json;
  /** When the wait comes due, from the time it is first opened; null for never. */
  dueAt(now: number): number | null;
  /** The value the workflow gets for a resolution, or the error it throws. */
  settle(resolution: WaitResolution, waitId: string): T;
}

/** How a wait step ends an execution: the run should pause on what it is blocked on. */
export interface PauseOutcome {
  kind: "paused";
  /** Waits opened in this execution, not stored yet. */
  waits: WaitRecord[];
  /** Ids of every wait the workflow is blocked on. */
  blockedOn: string[];
  pausedReason: PausedReason;
  reason: string;
}

/** The PausedReason of each kind of wait, most pressing first (the reason a run shows). */
const REASONS: ReadonlyArray<[WaitKind, PausedReason]> = [
  ["approval", "awaiting_approval"],
  ["user", "awaiting_user"],
  ["signal", "awaiting_signal"],
  ["child", "awaiting_child"],
  ["timer", "awaiting_timer"],
  ["retry", "awaiting_retry"],
];

/** The waits of one execution of a run (one per envelope). */
export class WaitSteps {
  readonly #run: RunRecord;
  readonly #host: EnvelopeHost;
  readonly #stored: Map<string, WaitRecord>;
  /** Opened in this execution and not stored yet. */
  readonly #opened = new Map<string, WaitRecord>();
  /** What the workflow is blocked on now. */
  readonly #blocked = new Map<string, WaitRecord>();
  readonly #isIdle: () => boolean;
  readonly #pause: (outcome: PauseOutcome) => void;
  readonly #meter: HistoryMeter | undefined;
  #checking = false;

  constructor(options: {
    run: RunRecord;
    host: EnvelopeHost;
    stored: readonly WaitRecord[];
    isIdle: () => boolean;
    pause: (outcome: PauseOutcome) => void;
    /** Counts what the waits add to the run's history (their arguments and resolutions). */
    meter?: HistoryMeter;
  }) {
    this.#run = options.run;
    this.#host = options.host;
    this.#stored = new Map(options.stored.map((w) => [w.id, w]));
    this.#isIdle = options.isIdle;
    this.#pause = options.pause;
    this.#meter = options.meter;
  }

  /** The stored wait with this id. */
  stored(id: string): WaitRecord | undefined {
    return this.#stored.get(id);
  }

  /**
   * Runs a wait step: replays its recorded resolution, completes it with a resolution stored
   * since, or blocks on it (a promise that stays pending in this execution).
   */
  run<T>(
    spec: WaitSpec<T>,
    begun: BegunStep,
    writer: JournalWriter,
    newStep: (seq: number, at: number) => StepRecord,
  ): Promise<T> {
    const { seq, recorded } = begun;
    const id = `w${seq}`;
    if (recorded?.status === "completed") return settle(spec, recorded.result as unknown as WaitResolution, id);
    // A new wait step's record: its arguments join the history (a recorded one's were counted on load).
    if (!recorded) this.#meter?.add(jsonBytes(spec.args), 0);
    const complete = (resolution: WaitResolution): Promise<T> => {
      const at = this.#host.now();
      // Counted, never refused: the resolution is stored already (the wait's row).
      this.#meter?.add(jsonBytes(resolution as unknown as Json), 0);
      const base = recorded ?? newStep(seq, at);
      writer.later(
        { ...base, status: "completed", result: resolution as unknown as Json, endedAt: at, epoch: this.#run.epoch },
        true,
      );
      return settle(spec, resolution, id);
    };
    const stored = this.#stored.get(id);
    if (stored?.status === "resolved" && stored.resolution) return complete(stored.resolution);
    let wait = stored ?? this.#opened.get(id);
    if (!wait) {
      const now = this.#host.now();
      const dueAt = spec.dueAt(now);
      // A timer already due needs no pause.
      if (spec.kind === "timer" && dueAt !== null && dueAt <= now) return complete({ outcome: "fired", at: now });
      wait = {
        runId: this.#run.id,
        id,
        seq,
        kind: spec.kind,
        name: spec.name,
        status: "open",
        details: spec.details,
        dueAt,
        resolution: undefined,
        createdAt: now,
      };
      if (!recorded) writer.later(newStep(seq, now), false);
    }
    return this.park(wait);
  }

  /** Blocks on `wait` (a pending promise) and pauses the run once nothing else is running. */
  park(wait: WaitRecord): Promise<never> {
    if (!this.#stored.has(wait.id)) this.#opened.set(wait.id, wait);
    this.#blocked.set(wait.id, wait);
    this.check();
    return new Promise<never>(() => {});
  }

  /**
   * After the current turn (so a workflow that goes on to its next call is not paused), pauses
   * the run if it is blocked on waits and nothing else runs.
   */
  check(): void {
    if (this.#checking || this.#blocked.size === 0) return;
    this.#checking = true;
    setImmediate(() => {
      this.#checking = false;
      if (this.#blocked.size === 0 || !this.#isIdle()) return;
      const blocked = [...this.#blocked.values()];
      const kinds = new Set(blocked.map((w) => w.kind));
      const pausedReason = REASONS.find(([kind]) => kinds.has(kind))?.[1] ?? "awaiting_signal";
      this.#pause({
        kind: "paused",
        waits: [...this.#opened.values()],
        blockedOn: blocked.map((w) => w.id),
        pausedReason,
        reason: `waiting for ${blocked.map(describeWait).join(", ")}`,
      });
    });
  }

  signal<P>(name: string, options: { timeoutMs?: number } = {}): WaitSpec<P> {
    const timeoutMs = positive("ctx.waitForSignal timeoutMs", options.timeoutMs);
    return {
      kind: "signal",
      name,
      stepName: `signal:${name}`,
      args: { name, timeoutMs: timeoutMs ?? null },
      details: { timeoutMs: timeoutMs ?? null },
      dueAt: (now) => (timeoutMs === undefined ? null : now + timeoutMs),
      settle: (r, id) => {
        if (r.outcome === "signalled") return r.value as P;
        throw new WaitTimeoutError(`no signal "${name}" came within ${timeoutMs} ms (run ${this.#run.id}, ${id})`);
      },
    };
  }

  ask<A>(question: string, options: AskOptions<A> = {}): WaitSpec<A> {
    const timeoutMs = positive("ctx.askUser timeoutMs", options.timeoutMs);
    const schema = options.schema;
    const jsonSchema = schema ? (z.toJSONSchema(schema, { unrepresentable: "any" }) as Json) : null;
    return {
      kind: "user",
      // The wait's name is text for listings; the question itself is kept exactly in its details.
      name: storableText(String(question)),
      stepName: "ask",
      args: { question, timeoutMs: timeoutMs ?? null },
      details: { question, schema: jsonSchema },
      dueAt: (now) => (timeoutMs === undefined ? null : now + timeoutMs),
      settle: (r, id) => {
        if (r.outcome !== "answered") {
          throw new WaitTimeoutError(
            `no answer to ${JSON.stringify(question)} within ${timeoutMs} ms (run ${this.#run.id}, ${id})`,
          );
        }
        // Validated when it was given; parsed again here so the workflow gets the schema's output.
        return schema ? (schema as ZodType<A>).parse(r.value) : (r.value as A);
      },
    };
  }

  sleep(ms: number): WaitSpec<void> {
    if (!(ms >= 0) || !Number.isFinite(ms)) {
      throw new InvalidDefinitionError(`ctx.sleep needs a finite number of milliseconds >= 0 (got ${ms})`);
    }
    return this.#timer({ ms }, (now) => now + ms);
  }

  sleepUntil(at: Date | number): WaitSpec<void> {
    const due = typeof at === "number" ? at : at instanceof Date ? at.getTime() : Number.NaN;
    if (!Number.isFinite(due)) {
      throw new InvalidDefinitionError(`ctx.sleepUntil needs a Date or epoch milliseconds (got ${String(at)})`);
    }
    return this.#timer({ until: due }, () => due);
  }

  #timer(args: Json, dueAt: (now: number) => number): WaitSpec<void> {
    return { kind: "timer", name: "sleep", stepName: "sleep", args, details: args, dueAt, settle: () => undefined };
  }

  approval(request: ApprovalRequest): WaitSpec<ApprovalDecision> {
    const expiresInMs = positive("ctx.requestApproval expiresInMs", request.expiresInMs);
    if (expiresInMs === undefined) {
      throw new InvalidDefinitionError("ctx.requestApproval needs expiresInMs: how long the approval stays open");
    }
    const payload =
      toJson(
        request.payload ?? null,
        `the payload of approval "${request.action}" (run ${this.#run.id})`,
        this.#host.maxPayloadBytes,
      ) ?? null;
    const approvers = [...(request.approvers ?? [])];
    const digest = approvalDigest(payload);
    return {
      kind: "approval",
      name: request.action,
      stepName: `approval:${request.action}`,
      args: { action: request.action, digest, approvers, expiresInMs },
      details: { action: request.action, payload, digest, approvers },
      dueAt: (now) => now + expiresInMs,
      settle: (r, id) => {
        if (r.outcome === "approved") {
          return { approved: true, approvalId: id, by: r.by, note: r.note, at: r.at };
        }
        if (r.outcome === "denied") {
          throw new ApprovalDeniedError(
            `approval "${request.action}" (${id}) was denied by ${r.by?.id ?? "someone"}${r.note ? `: ${r.note}` : ""}`,
            { approvalId: id, by: r.by?.id },
          );
        }
        throw new ApprovalExpiredError(
          `approval "${request.action}" (${id}) expired after ${expiresInMs} ms without a decision`,
          { approvalId: id },
        );
      },
    };
  }

  /** The wait for one run of a child's chain to end: how it ended (see {@link settleChild}). */
  child(childRunId: string): WaitSpec<ChildEnding> {
    return {
      kind: "child",
      name: childRunId,
      stepName: `result:${childRunId}`,
      args: { runId: childRunId },
      details: { childRunId },
      dueAt: () => null,
      settle: (r) => (r.value ?? {}) as ChildEnding,
    };
  }
}

/** How a child run ended, as its wait's resolution says. */
export interface ChildEnding {
  runId?: string;
  state?: string;
  output?: Json;
  error?: SerializedError | null;
  /** Set when the child continued as new: the parent goes on waiting for this run. */
  continuedTo?: string | null;
}

/** The output of a child that completed, or the `RunEndedError` of one that did not. */
export function settleChild<O>(childRunId: string, ending: ChildEnding): O {
  if (ending.state === "COMPLETED") return ending.output as O;
  throw new RunEndedError({
    runId: ending.runId ?? childRunId,
    state: (ending.state ?? "FAILED") as "FAILED",
    error: ending.error ?? undefined,
  });
}

function settle<T>(spec: WaitSpec<T>, resolution: WaitResolution, id: string): Promise<T> {
  try {
    return Promise.resolve(spec.settle(resolution, id));
  } catch (error) {
    return Promise.reject(error);
  }
}

function positive(what: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!(value > 0) || !Number.isFinite(value)) {
    throw new InvalidDefinitionError(`${what} must be a positive number of milliseconds (got ${value})`);
  }
  return value;
}
