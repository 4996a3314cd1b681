import type { AgentDefinition } from "./agent-definition.ts";
import { lastAttemptOpen, recordSettlement, type Settlement, settleOpenAttempt, statusQuery } from "./effect-steps.ts";
import type { SerializedError } from "./errors.ts";
import { parseInput } from "./input-schema.ts";
import type { StepRecord } from "./records.ts";

/**
 * The effects of a cancelled run whose outcome is open, settled before the run may end
 * CANCELLED (DESIGN §4, §5). Nothing runs again after a cancel, so each is asked about once more
 * and what it says is recorded: `applied` (the step completes with the answer's result),
 * `not_applied`, or unknown — which holds the run in NEEDS_RECONCILIATION until an operator
 * decides. Without a status query the outcome stays unknown, an idempotent effect's too: it
 * would only be known by running it again.
 */

/** What {@link settleForCancel} needs. */
export interface CancelSettlementOptions {
  runId: string;
  /** The run's agent in this process; without it (or the tool) nothing can be asked. */
  agent: AgentDefinition | undefined;
  /** The run's steps as stored, after what the cancelled execution wrote. */
  journal: readonly StepRecord[];
  /**
   * Ask again about effects already `unknown`: yes on a journal this process did not just
   * execute; no right after the execution whose own query found them unknown.
   */
  askUnknown: boolean;
  /** The end of a step's attempt that has none: its process is gone, or it ignored its signal past the grace. */
  cutOff(step: StepRecord): SerializedError;
  now(): number;
  maxPayloadBytes: number;
  /** How long each status query gets before its answer counts as unknown. */
  timeoutMs: number;
  /** Fired when the run is taken from this worker: nothing is decided then. */
  signal: AbortSignal;
}

/**
 * Settles every effect step of `journal` whose outcome is open; returns the changed steps (copies,
 * for the caller to write with the run's next transition), each with the answer on its effect.
 */
export async function settleForCancel(options: CancelSettlementOptions): Promise<StepRecord[]> {
  const open = options.journal.filter(
    (s) =>
      s.status === "started" &&
      s.effect !== undefined &&
      lastAttemptOpen(s) &&
      (options.askUnknown || s.effect.status !== "unknown"),
  );
  return Promise.all(open.map((s) => settleOne(s, options)));
}

async function settleOne(stored: StepRecord, options: CancelSettlementOptions): Promise<StepRecord> {
  const step: StepRecord = { ...stored, attempts: [...stored.attempts] };
  const last = step.attempts.at(-1);
  if (last && last.endedAt === null) {
    step.attempts[step.attempts.length - 1] = { ...last, endedAt: options.now(), error: options.cutOff(step) };
  }
  const settled = await ask(step, options);
  recordSettlement(step, settled, options.now());
  return step;
}

async function ask(step: StepRecord, options: CancelSettlementOptions): Promise<Settlement> {
  const { agent, runId } = options;
  const effect = step.effect;
  const label = `tool "${step.name}" (run ${runId}, step ${step.seq})`;
  const tool = agent?.tools[step.name];
  const declared = tool?.effect;
  if (!agent || !effect || !tool || !declared) {
    return {
      outcome: "unknown",
      why: `its attempt was cut off by the cancel, and ${agent ? `agent "${agent.name}" has no effect tool "${step.name}" here` : "the run's agent is not registered in this process"} to ask about it`,
    };
  }
  let args: unknown = step.args;
  if (tool.input) {
    const parsed = parseInput(
      tool.input,
      step.args,
      `the recorded arguments of ${label}`,
      "The tool's input schema no longer takes them",
    );
    if (!parsed.ok) {
      return {
        outcome: "unknown",
        why: `its attempt was cut off by the cancel, and its status query could not be asked: ${parsed.error.message}`,
      };
    }
    args = parsed.value;
  }
  const status = statusQuery(
    declared,
    { runId, agent: agent.name, tool: step.name, seq: step.seq, args },
    () => effect.idempotencyKey,
  );
  try {
    return await settleOpenAttempt({ status, idempotent: declared.idempotent === true }, step, {
      signal: options.signal,
      label,
      maxPayloadBytes: options.maxPayloadBytes,
      now: options.now,
      retrying: false,
      timeoutMs: options.timeoutMs,
    });
  } catch (error) {
    if (options.signal.aborted) throw error;
    // The answer could not be stored (a result too large, not JSON): the outcome stays open.
    return {
      outcome: "unknown",
      why: `its status query answered, but the answer could not be recorded: ${(error as Error)?.message ?? String(error)}`,
    };
  }
}

/** `journal` with `changed` in place of the steps of the same seq. */
export function withSteps(journal: readonly StepRecord[], changed: readonly StepRecord[]): StepRecord[] {
  if (changed.length === 0) return [...journal];
  const bySeq = new Map(changed.map((s) => [s.seq, s]));
  return journal.map((s) => bySeq.get(s.seq) ?? s);
}
