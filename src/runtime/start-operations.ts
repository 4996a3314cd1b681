import type { RuntimeBackend } from "../backend/backend.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
import { UnknownNameError } from "../core/errors.ts";
import { resolveRunFlow } from "../core/flow-control.ts";
import { parseWorkflowInput } from "../core/input-schema.ts";
import type { RunRecord, TransitionRecord, Versions } from "../core/records.ts";
import { toJson } from "../core/serialize.ts";
import { recordError, startRunStartSpan } from "../core/telemetry/spans.ts";
import { startParentContext, storedTraceContext } from "../core/telemetry/trace-context.ts";
import { newRunId } from "./run-id.ts";
import { type StartOptions, startMeta } from "./runtime-options.ts";

/**
 * The client operation `run`: a run of one of this runtime's agents is created PENDING (or the
 * run its key names is found), with its input and options checked before anything is written.
 */

/** What starting a run needs from the runtime. */
export interface StartOperationsHost {
  backend: RuntimeBackend;
  /** Bytes of JSON text the input and meta may take. */
  maxPayloadBytes: number;
  /** The versions a run of `agent` runs under now. */
  versions(agent: string): Versions;
  /** Tells listeners about the run's first transition. */
  emit(transition: TransitionRecord, run: RunRecord): void;
  /** This runtime's worker, if it has one: it looks for the new run. */
  worker: { poke(): void } | undefined;
}

/**
 * Starts a run of `agent`'s `workflow`; returns its id, and whether it was created (false when
 * its key named an existing run).
 */
export async function startRun(
  host: StartOperationsHost,
  agent: AgentDefinition,
  workflow: string,
  input: unknown,
  options: StartOptions,
): Promise<{ runId: string; created: boolean }> {
  if (!Object.hasOwn(agent.workflows, workflow)) {
    throw new UnknownNameError(
      "UNKNOWN_WORKFLOW",
      `unknown workflow "${workflow}" in agent "${agent.name}" (known: ${Object.keys(agent.workflows).join(", ")})`,
    );
  }
  // Checked before anything is written: a bad input starts nothing. The raw input is stored;
  // each execution parses it again (see `AgentDefinition.inputs`).
  const checked = parseWorkflowInput(agent, workflow, input, "No run was started");
  if (!checked.ok) throw checked.error;
  const flow = resolveRunFlow(agent.name, workflow, agent.flow, checked.value, options);
  const id = newRunId();
  // The run's trace: its executions' spans start under this one, in whatever process runs them.
  const parent = startParentContext(options.traceparent, options.tracestate);
  const started = startRunStartSpan(parent, id, agent.name, workflow);
  try {
    const meta = startMeta(agent, options, host.maxPayloadBytes);
    const trace = storedTraceContext(started.context);
    if (trace) meta.trace = { ...trace };
    const created = await host.backend.createRun({
      id,
      agent: agent.name,
      workflow,
      key: options.key ?? null,
      input:
        toJson(input, `the input of workflow "${workflow}" of agent "${agent.name}"`, host.maxPayloadBytes) ?? null,
      versions: host.versions(agent.name),
      meta,
      actor: options.by ?? { kind: "user", id: "local" },
      reason: options.key ? `started with key "${options.key}"` : "started",
      at: Date.now(),
      flow,
    });
    if (created.created) {
      host.emit(created.transition, created.run);
      host.worker?.poke();
    } else {
      // The key named a run that exists: its own trace goes on, this span only says so.
      started.span.setAttribute("cairn.run.existing", created.run.id);
    }
    return { runId: created.run.id, created: created.created };
  } catch (error) {
    recordError(started.span, error);
    throw error;
  } finally {
    started.span.end();
  }
}
