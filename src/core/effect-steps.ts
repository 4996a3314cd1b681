import type { EffectStatusAnswer, ToolEffect } from "./agent-definition.ts";
import { EffectNotAppliedError, InvalidDefinitionError } from "./errors.ts";
import type { EffectRecord, Json, StatusAnswer, StepRecord } from "./records.ts";
import { toJson } from "./serialize.ts";
import { storableText } from "./text.ts";

/**
 * What the step executor needs to run a step as an effect (DESIGN §5): how to write its intent,
 * how to ask the outside world whether an attempt of unknown outcome applied, and what to do when
 * nobody can tell.
 */
export interface EffectSpec {
  /** The intent record written before the first attempt (status `intended`). */
  intent(): EffectRecord;
  /** Running it again with the same key is harmless (no status query needed to retry). */
  idempotent: boolean;
  /** The tool's status query, or undefined when it has none. */
  status: ((signal: AbortSignal) => Promise<EffectStatusAnswer>) | undefined;
  /** The receipt of a successful attempt. */
  receipt(result: unknown, attempt: number): Json;
  /**
   * The outcome is unknown and stays so: the step (effect `unknown`) is committed, then this
   * ends the run's execution NEEDS_RECONCILIATION. It never resolves.
   */
  unresolved(step: StepRecord, why: string): Promise<never>;
}

/** Whether an attempt's error says, for sure, that the effect did not happen. */
export function saysNotApplied(error: unknown): boolean {
  if (error instanceof EffectNotAppliedError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return code === "EFFECT_NOT_APPLIED" || code === "EFFECT_REFUSED";
}

/**
 * Whether the last attempt of an effect step left its outcome open: it never ended (its process
 * died), or it ended with an error that is not a sure "not applied", and nothing settled it since.
 */
export function lastAttemptOpen(step: StepRecord): boolean {
  const effect = step.effect;
  if (!effect || effect.status === "applied") return false;
  if (effect.status === "unknown") return true;
  if (effect.status === "not_applied") return false;
  const last = step.attempts.at(-1);
  if (!last) return false;
  if (last.endedAt === null) return true;
  return last.error !== undefined && !saysNotApplied(last.error);
}

/**
 * How an open outcome was settled; `answer` is the status query's answer, when it was asked (an
 * idempotent effect retried without a query has none).
 */
export type Settlement = (
  | { outcome: "applied"; result: Json; receipt: Json }
  | { outcome: "not_applied" }
  | { outcome: "unknown"; why: string }
) & { answer?: StatusAnswer };

/** What {@link settleOpenAttempt} needs besides the effect and its step. */
export interface SettleOptions {
  /** The run's stop signal (not a cancellation: a cancelled run still asks). */
  signal: AbortSignal;
  /** Names the step in messages, e.g. `tool "pay" (run r1, step 2)`. */
  label: string;
  maxPayloadBytes: number;
  now(): number;
  /**
   * A `not_applied` is followed by another attempt. Without a status query an idempotent effect
   * is then simply run again; when nothing runs again (the run is cancelled) nobody can tell
   * whether it happened, so its outcome is unknown.
   */
  retrying: boolean;
  /** After this long without an answer, the query's answer counts as `unknown`. @default no limit */
  timeoutMs?: number | undefined;
}

/**
 * Settles an attempt of unknown outcome: asks the status query; without one, an idempotent effect
 * that will be retried is `not_applied` (standing for "safe to run again") and any other is
 * unknown. A query that throws, answers nonsense or does not answer within `timeoutMs` counts as
 * unknown. Rejects with the stop signal's reason when the run is stopped meanwhile.
 */
export async function settleOpenAttempt(
  spec: Pick<EffectSpec, "status" | "idempotent">,
  step: StepRecord,
  options: SettleOptions,
): Promise<Settlement> {
  const { signal, label, maxPayloadBytes } = options;
  const last = step.attempts.at(-1);
  const what = last?.error
    ? `attempt ${last.attempt} ended with ${last.error.name}: ${last.error.message}`
    : "its attempt was cut off";
  if (!spec.status) {
    if (spec.idempotent && options.retrying) return { outcome: "not_applied" };
    return {
      outcome: "unknown",
      why: spec.idempotent
        ? `${what}; the tool has no status query, and although it is idempotent it is not run again (the run is cancelled), so nobody can tell whether it happened`
        : `${what}; the tool has no status query and is not declared idempotent, so running it again could apply it twice`,
    };
  }
  // Text from the tool and its query is stored as it is said, made storable (no NUL, no lone surrogate).
  const answered = (outcome: StatusAnswer["outcome"], note?: string): StatusAnswer => ({
    at: options.now(),
    attempt: last?.attempt ?? 0,
    outcome,
    ...(note ? { note: storableText(String(note)) } : {}),
  });
  let answer: EffectStatusAnswer;
  try {
    answer = await ask(spec.status, signal, options.timeoutMs);
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    const note =
      error instanceof StatusQueryTimeout
        ? error.message
        : `the status query failed: ${(error as Error)?.message ?? String(error)}`;
    return { outcome: "unknown", why: storableText(`${what}; ${note}`), answer: answered("unknown", note) };
  }
  if (signal.aborted) throw signal.reason;
  if (answer?.outcome === "applied") {
    return {
      outcome: "applied",
      result: toJson(answer.result ?? null, `the result of ${label} (from its status query)`, maxPayloadBytes) ?? null,
      receipt: toJson(answer.receipt ?? { statusQuery: "applied" }, `the receipt of ${label}`, maxPayloadBytes) ?? null,
      answer: answered("applied"),
    };
  }
  if (answer?.outcome === "not_applied") return { outcome: "not_applied", answer: answered("not_applied") };
  const note =
    answer?.outcome === "unknown"
      ? answer.note
      : `the status query answered ${JSON.stringify(answer) ?? String(answer)}, not an outcome`;
  return {
    outcome: "unknown",
    why: storableText(`${what}; its status query could not tell${note ? `: ${note}` : ""}`),
    answer: answered("unknown", note),
  };
}

/** The status query took longer than it was given. */
class StatusQueryTimeout extends Error {}

/** Asks `query`, giving up after `timeoutMs` (its signal fires then too) when that is set. */
async function ask(
  query: NonNullable<EffectSpec["status"]>,
  signal: AbortSignal,
  timeoutMs: number | undefined,
): Promise<EffectStatusAnswer> {
  if (timeoutMs === undefined) return query(signal);
  const limit = new AbortController();
  const onStop = () => limit.abort(signal.reason);
  if (signal.aborted) throw signal.reason;
  signal.addEventListener("abort", onStop, { once: true });
  const given = new Promise<never>((_, reject) => {
    limit.signal.addEventListener("abort", () => reject(limit.signal.reason), { once: true });
  });
  const timer = setTimeout(
    () => limit.abort(new StatusQueryTimeout(`its status query gave no answer within ${timeoutMs} ms`)),
    timeoutMs,
  );
  // A query that ignores its signal may still answer later: that answer is not waited for.
  const asked = Promise.resolve().then(() => query(limit.signal));
  asked.catch(() => {});
  given.catch(() => {});
  try {
    return await Promise.race([asked, given]);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onStop);
  }
}

/**
 * Writes a settlement on `step` (at `at`): the query's answer joins the effect's answers; applied
 * completes the step with the answer's result and receipt; a `not_applied` the query gave makes
 * the effect `not_applied` (a retry's new intent follows, or nothing does); unknown records why.
 */
export function recordSettlement(step: StepRecord, settled: Settlement, at: number): void {
  const effect = step.effect;
  if (!effect) return;
  const answers = settled.answer ? [...(effect.statusAnswers ?? []), settled.answer] : effect.statusAnswers;
  const kept = answers ? { statusAnswers: answers } : {};
  if (settled.outcome === "applied") {
    step.status = "completed";
    step.result = settled.result;
    step.endedAt = at;
    step.effect = {
      ...effect,
      ...kept,
      status: "applied",
      receipt: settled.receipt,
      settledBy: "status",
      settledAt: at,
      unknown: undefined,
    };
  } else if (settled.outcome === "unknown") {
    step.effect = { ...effect, ...kept, status: "unknown", unknown: settled.why };
  } else if (settled.answer) {
    step.effect = {
      ...effect,
      ...kept,
      status: "not_applied",
      settledBy: "status",
      settledAt: at,
      unknown: undefined,
    };
  }
}

/** The status query of effect tool `tool` for one call (its arguments and its step), bound to its key. */
export function statusQuery(
  declared: ToolEffect,
  call: { runId: string; agent: string; tool: string; seq: number; args: unknown },
  idempotencyKey: () => string,
): EffectSpec["status"] {
  const status = declared.status;
  if (!status) return undefined;
  const { runId, agent, tool, seq, args } = call;
  return async (signal) => status({ runId, agent, tool, seq, idempotencyKey: idempotencyKey(), signal }, args);
}

/**
 * Builds the {@link EffectSpec} of one call of an effect tool: its intent (id `e<seq>`, key
 * namespaced `<agent>/<tool>:<key>`), its status query bound to the call's arguments, its
 * receipt.
 */
export function effectSpec(options: {
  runId: string;
  agent: string;
  tool: string;
  declared: ToolEffect;
  args: unknown;
  seq: number;
  now: () => number;
  maxPayloadBytes: number;
  /** Set on a compensation's own effect: the seq of the effect it undoes. */
  compensates?: number | undefined;
  unresolved(step: StepRecord, why: string): Promise<never>;
}): EffectSpec {
  const { runId, agent, tool, declared, args, seq } = options;
  const namespace = `${agent}/${tool}`;
  let key: string | undefined;
  const idempotencyKey = (): string => {
    if (key !== undefined) return key;
    const own = declared.key ? declared.key(args, { runId, seq }) : `${runId}:${seq}`;
    if (typeof own !== "string" || own.length === 0) {
      throw new InvalidDefinitionError(
        `the effect key function of tool "${tool}" (agent "${agent}") returned ${JSON.stringify(own)}; it must return a non-empty string that names the logical effect, e.g. the transfer id`,
      );
    }
    key = `${namespace}:${own}`;
    return key;
  };
  const label = `tool "${tool}" (run ${runId}, step ${seq})`;
  return {
    intent: () => ({
      id: `e${seq}`,
      namespace,
      idempotencyKey: idempotencyKey(),
      status: "intended",
      intentAt: options.now(),
      receipt: undefined,
      settledBy: undefined,
      settledAt: undefined,
      unknown: undefined,
      reconciliation: undefined,
      compensate:
        declared.compensate === undefined
          ? null
          : typeof declared.compensate === "string"
            ? declared.compensate
            : declared.compensate.tool,
      compensates: options.compensates,
      statusAnswers: [],
    }),
    idempotent: declared.idempotent === true,
    status: statusQuery(declared, { runId, agent, tool, seq, args }, idempotencyKey),
    receipt: (result, attempt) =>
      toJson(
        declared.receipt ? declared.receipt(result) : { idempotencyKey: idempotencyKey(), attempt },
        `the receipt of ${label}`,
        options.maxPayloadBytes,
      ) ?? null,
    unresolved: options.unresolved,
  };
}
