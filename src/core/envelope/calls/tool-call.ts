import type { ToolCallOptions } from "../../context.ts";
import { type EffectSpec, effectSpec } from "../../effect-steps.ts";
import { EffectUnresolvedError, UnknownNameError } from "../../errors.ts";
import { parseInput } from "../../input-schema.ts";
import { serializeError } from "../../serialize.ts";
import type { EnvelopeState } from "../envelope-state.ts";
import { governedCall } from "../governed-call.ts";
import { runStep, type StepSpec } from "../journaled-step.ts";
import type { BegunStep } from "../replay-cursor.ts";
import { ToolAttemptContext } from "../tool-context.ts";

/** A compensation's own call of its tool: its step number, taken already, and the effect it undoes. */
export interface CompensationCall {
  begun: BegunStep;
  /** The seq of the effect step it undoes. */
  compensates: number;
}

/**
 * `ctx.tool(name, args)`: the agent's tool as a `tool` step, its arguments parsed by its input
 * schema, governed (policies, and an approval the tool or a policy needs) before it runs. A
 * compensation's call is not asked about again (its number is taken by the compensation).
 */
export function toolCall(
  x: EnvelopeState,
  name: string,
  args: unknown,
  options: ToolCallOptions | undefined,
  compensation?: CompensationCall,
): Promise<unknown> {
  const tool = x.agent.tools[name];
  if (!tool) {
    const known = Object.keys(x.agent.tools).join(", ") || "none";
    return Promise.reject(
      new UnknownNameError("UNKNOWN_TOOL", `unknown tool "${name}" in agent "${x.agent.name}" (known: ${known})`),
    );
  }
  let parsed: unknown = args;
  if (tool.input) {
    const result = parseInput(
      tool.input,
      args,
      `invalid input for tool "${name}" of agent "${x.agent.name}"`,
      "The tool did not run; pass arguments that match its input schema",
    );
    if (!result.ok) return Promise.reject(result.error);
    parsed = result.value;
  }
  const compensates = compensation?.compensates;
  const spec: StepSpec<unknown> = {
    policy: options?.retry ?? tool.retry,
    startToCloseTimeoutMs: options?.startToCloseTimeoutMs ?? tool.startToCloseTimeoutMs,
    heartbeatTimeoutMs: tool.heartbeatTimeoutMs,
    run: (attempt) => tool.run(new ToolAttemptContext(x.run, name, attempt, x.host), parsed),
    effect: tool.effect ? (seq) => toolEffect(x, name, parsed, seq, compensates) : undefined,
    rateLimit: x.host.rateLimits?.ofTool(x.agent.name, name),
  };
  if (compensation) return runStep(x, "tool", name, args, spec, compensation.begun);
  return governedCall(x, "tool", "tool", name, args, tool.approval, (begun) =>
    runStep(x, "tool", name, args, spec, begun),
  );
}

/**
 * The effect spec of a call of effect tool `name` at step `seq`; an outcome nobody can settle ends
 * the execution NEEDS_RECONCILIATION.
 */
function toolEffect(
  x: EnvelopeState,
  name: string,
  args: unknown,
  seq: number,
  compensates: number | undefined,
): EffectSpec {
  const declared = x.agent.tools[name]?.effect;
  if (!declared) throw new Error(`tool "${name}" declares no effect`);
  const runId = x.run.id;
  return effectSpec({
    runId,
    agent: x.agent.name,
    tool: name,
    declared,
    args,
    seq,
    now: () => x.host.now(),
    maxPayloadBytes: x.host.maxPayloadBytes,
    compensates,
    unresolved: (step, why) => {
      const effect = step.effect;
      const error = new EffectUnresolvedError(
        `the outcome of effect ${effect?.id ?? `e${seq}`} (tool "${name}", key ${effect?.idempotencyKey ?? "?"}) is unknown: ${why}. Find out whether it happened, then: cairn reconcile ${runId} ${effect?.id ?? `e${seq}`} --outcome applied|not_applied`,
        { effectId: effect?.id ?? `e${seq}` },
      );
      x.settle?.({ kind: "needs_reconciliation", error: serializeError(error) });
      return new Promise<never>(() => {});
    },
  });
}
