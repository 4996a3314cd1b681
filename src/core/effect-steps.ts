import type { EffectStatusAnswer, ToolEffect } from "../agent/agent.ts";
import { EffectNotAppliedError, InvalidDefinitionError } from "./errors.ts";
import type { EffectRecord, Json, StepRecord } from "./records.ts";
import { toJson } from "./serialize.ts";

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

/** How an open outcome was settled. */
export type Settlement =
  | { outcome: "applied"; result: Json; receipt: Json }
  | { outcome: "not_applied" }
  | { outcome: "unknown"; why: string };

/**
 * Settles an attempt of unknown outcome: asks the status query; without one, an idempotent
 * effect is retried (`not_applied` stands for "safe to run again") and any other is unknown.
 * `signal` is the run's stop signal (not a cancellation: a cancelled run still asks).
 */
export async function settleOpenAttempt(
  spec: EffectSpec,
  step: StepRecord,
  signal: AbortSignal,
  label: string,
  maxPayloadBytes: number,
): Promise<Settlement> {
  const last = step.attempts.at(-1);
  const what = last?.error
    ? `attempt ${last.attempt} ended with ${last.error.name}: ${last.error.message}`
    : "its attempt was cut off";
  if (!spec.status) {
    if (spec.idempotent) return { outcome: "not_applied" };
    return {
      outcome: "unknown",
      why: `${what}; the tool has no status query and is not declared idempotent, so running it again could apply it twice`,
    };
  }
  let answer: EffectStatusAnswer;
  try {
    answer = await spec.status(signal);
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    return {
      outcome: "unknown",
      why: `${what}; its status query failed: ${(error as Error)?.message ?? String(error)}`,
    };
  }
  if (answer?.outcome === "applied") {
    return {
      outcome: "applied",
      result: toJson(answer.result ?? null, `the result of ${label} (from its status query)`, maxPayloadBytes) ?? null,
      receipt: toJson(answer.receipt ?? { statusQuery: "applied" }, `the receipt of ${label}`, maxPayloadBytes) ?? null,
    };
  }
  if (answer?.outcome === "not_applied") return { outcome: "not_applied" };
  const note = answer?.outcome === "unknown" && answer.note ? `: ${answer.note}` : "";
  return { outcome: "unknown", why: `${what}; its status query could not tell${note}` };
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
  const status = declared.status;
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
    }),
    idempotent: declared.idempotent === true,
    status: status
      ? async (signal) => status({ runId, agent, tool, seq, idempotencyKey: idempotencyKey(), signal }, args)
      : undefined,
    receipt: (result, attempt) =>
      toJson(
        declared.receipt ? declared.receipt(result) : { idempotencyKey: idempotencyKey(), attempt },
        `the receipt of ${label}`,
        options.maxPayloadBytes,
      ) ?? null,
    unresolved: options.unresolved,
  };
}
