import type { AgentDefinition } from "../agent-definition.ts";
import { UnknownNameError } from "../errors.ts";
import { parseWorkflowInput } from "../input-schema.ts";
import type { RunRecord, RunUsage, StepRecord, WaitRecord } from "../records.ts";
import { serializeError, toJson } from "../serialize.ts";
import { endOpenSpans, type SpanScope } from "../telemetry/spans.ts";
import { undoEffects } from "./compensation.ts";
import type { EnvelopeHost } from "./envelope-host.ts";
import type { CompensationOutcome, EnvelopeOutcome, InFlightStep } from "./envelope-outcome.ts";
import { EnvelopeState } from "./envelope-state.ts";
import { workflowContext } from "./workflow-context.ts";

/**
 * The execution boundary around one run of a workflow (DESIGN §4). It replays the run's journal:
 * a `ctx` call whose step has a saved result returns that result without running; the first
 * call without one executes, recording its start before and its result after. Step numbers are
 * taken synchronously when a `ctx` method is called, so concurrent steps (`Promise.all`) get
 * the same numbers on every replay. Users never construct it; the worker does.
 *
 * This class is the run's lifecycle (execute, compensate, conclude, stop, cancel); the parts it
 * owns share an {@link EnvelopeState}: the replay cursor, the journaled step, the governance
 * path, the `ctx` object and one file per kind of call (`calls/`).
 */
export class WorkflowEnvelope {
  readonly #x: EnvelopeState;

  constructor(options: {
    run: RunRecord;
    agent: AgentDefinition;
    journal: readonly StepRecord[];
    waits?: readonly WaitRecord[];
    host: EnvelopeHost;
    /** The span of this execution (`startRunSpan`): its steps' spans start under it. */
    trace?: SpanScope | undefined;
  }) {
    this.#x = new EnvelopeState(options);
  }

  /**
   * Commits the step records still queued (results are committed with the next write, see
   * `JournalWriter`). The worker calls it before recording INTERRUPTED on shutdown, so finished
   * tools are not run again.
   */
  flushJournal(): Promise<void> {
    return this.#x.writer.flush();
  }

  /**
   * Cancels the run: attempts in flight see their signal fire (a result that still arrives is
   * recorded), no new step starts, and `execute()` ends (`stopped` with `reason`) once no step is
   * in flight — or when the caller gives up waiting and calls `stop()`.
   */
  cancel(reason: Error): void {
    this.#x.cancel(reason);
  }

  /** The steps that were in flight when `cancel()` was called, with how each has ended so far. */
  inFlightAtCancel(): InFlightStep[] {
    return (this.#x.cancelledSteps ?? []).map((s) => ({
      seq: s.seq,
      kind: s.kind,
      name: s.name,
      outcome: s.status === "started" ? "unknown" : s.status,
    }));
  }

  /**
   * What the run used (its journal and this execution), or undefined when that is not known here:
   * a run with children gets their usage when they end, so its total is read from its journal.
   */
  usage(): RunUsage | undefined {
    const governor = this.#x.governance.governor;
    return governor.exact ? governor.usage() : undefined;
  }

  /** Fired when the run is stopped; every attempt in flight sees it. */
  get signal(): AbortSignal {
    return this.#x.stopped.signal;
  }

  /**
   * Stops the run where it is: attempts in flight are aborted, nothing more is written, and
   * `execute()` resolves with `stopped`.
   */
  stop(reason: unknown): void {
    this.#x.stop(reason);
  }

  /** Runs (or replays) the workflow to its end. Never rejects. */
  async execute(): Promise<EnvelopeOutcome> {
    const { run, agent } = this.#x;
    const workflow = agent.workflows[run.workflow];
    if (!workflow) {
      const known = Object.keys(agent.workflows).join(", ");
      const error = new UnknownNameError(
        "UNKNOWN_WORKFLOW",
        `unknown workflow "${run.workflow}" in agent "${agent.name}" (known: ${known})`,
      );
      return { kind: "failed", error: serializeError(error) };
    }
    // A declared input schema is checked on every execution: the workflow gets what it parses to
    // (defaults filled in), and an input it refuses fails the run before any of its code runs.
    const parsed = parseWorkflowInput(agent, run.workflow, run.input, "The workflow did not run");
    if (!parsed.ok) return { kind: "failed", error: serializeError(parsed.error) };
    const input = parsed.value;
    const ctx = workflowContext(this.#x);
    return this.#conclude(async (): Promise<EnvelopeOutcome> => {
      let output: unknown;
      try {
        output = await workflow(ctx, input);
      } catch (error) {
        return this.#outcome({ error });
      }
      // No run completes with an effect whose outcome is open: one the workflow did not await is
      // waited for (one that ends unknown sends the run to NEEDS_RECONCILIATION instead).
      const effects = this.#x.effectsInFlight;
      while (effects.size > 0) await Promise.allSettled([...effects]);
      return this.#outcome({ output });
    });
  }

  /**
   * Undoes the run's applied effects that declare `compensate` (see `undoEffects`). Called by the
   * worker on a fresh envelope once the run is COMPENSATING.
   */
  async compensate(): Promise<CompensationOutcome> {
    this.#x.meter.stopRefusing();
    const outcome = await this.#conclude(() => undoEffects(this.#x));
    if (outcome.kind === "compensated" || outcome.kind === "compensation_failed") return outcome;
    if (outcome.kind === "needs_reconciliation" || outcome.kind === "stopped") return outcome;
    return { kind: "stopped", reason: new Error(`unexpected outcome ${outcome.kind} while compensating`) };
  }

  /**
   * Runs `work` (the workflow, or the compensations) until it ends, the run is stopped, or a step
   * settles the execution (a pause, a continue-as-new, an unresolved effect, a governance refusal);
   * then commits what is queued and abandons what is still in flight.
   */
  async #conclude<O extends { kind: string }>(work: () => Promise<O>): Promise<O | EnvelopeOutcome> {
    const x = this.#x;
    const stopped = new Promise<EnvelopeOutcome>((resolve) => {
      // A divergence stops the run too (so attempts in flight end), but it is a failure to record.
      const onStop = () => {
        const diverged = x.cursor.diverged;
        resolve(
          diverged
            ? { kind: "failed", error: serializeError(diverged) }
            : { kind: "stopped", reason: x.stopped.signal.reason },
        );
      };
      if (x.stopped.signal.aborted) onStop();
      else x.stopped.signal.addEventListener("abort", onStop, { once: true });
    });
    const settled = new Promise<EnvelopeOutcome>((resolve) => {
      x.settle = resolve;
    });
    let outcome: O | EnvelopeOutcome = await Promise.race([work(), stopped, settled]);
    x.finished = true;
    endOpenSpans(x.openSpans, outcome.kind);
    if (outcome.kind !== "stopped") {
      // The run's final transition must not overtake the results it reports: a completed run's
      // transition carries those still queued, any other outcome writes them first.
      try {
        if (outcome.kind === "completed") outcome = { ...outcome, steps: await x.writer.drain() };
        else await x.writer.flush();
      } catch (error) {
        outcome = { kind: "stopped", reason: error };
      }
      // Steps the workflow started and did not await are abandoned: their signal fires and
      // nothing they do is written after the run's end (or its pause: it is replayed later).
      x.writer.close();
      x.stop(new Error(`run ${x.run.id} ${outcome.kind}; steps still in flight are abandoned`));
    }
    return outcome;
  }

  #outcome(result: { output?: unknown; error?: unknown }): EnvelopeOutcome {
    const x = this.#x;
    const refused = x.cursor.diverged ?? x.governance.blocked;
    if (refused) return { kind: "failed", error: serializeError(refused) };
    if (x.stopped.signal.aborted) return { kind: "stopped", reason: x.stopped.signal.reason };
    // Completed steps the code never reached mean the code changed under the run.
    const unreached = x.cursor.unreached();
    if (unreached) return { kind: "failed", error: serializeError(unreached) };
    if ("error" in result) return { kind: "failed", error: serializeError(result.error) };
    try {
      return {
        kind: "completed",
        output:
          toJson(
            result.output,
            `the output of workflow "${x.run.workflow}" (run ${x.run.id})`,
            x.host.maxPayloadBytes,
          ) ?? null,
      };
    } catch (error) {
      return { kind: "failed", error: serializeError(error) };
    }
  }
}
