import type { RuntimeBackend } from "../backend/backend.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
import { RunNotResumableError } from "../core/errors.ts";
import { forkJournal, rerunPoint } from "../core/fork-journal.ts";
import { parseWorkflowInput } from "../core/input-schema.ts";
import type { Actor, Json, RunRecord, TransitionRecord, Versions } from "../core/records.ts";
import { toJson } from "../core/serialize.ts";
import { startRunStartSpan } from "../core/telemetry/spans.ts";
import { activeContext, storedTraceContext } from "../core/telemetry/trace-context.ts";
import { newRunId } from "./run-id.ts";

/**
 * The client operations `fork` and `rerun` (DESIGN §4, "Fork and rerun"): a new run whose journal
 * is the source's up to a step, on the code deployed now, its lineage recorded both ways.
 */

/** What forking needs from the runtime. */
export interface ForkOperationsHost {
  backend: RuntimeBackend;
  getRun(runId: string): Promise<RunRecord>;
  /** The agent's definition when this runtime has its code (the new input is checked against it). */
  agent(name: string): AgentDefinition | undefined;
  /** The versions a run of `agent` runs under now. */
  versions(run: RunRecord): Versions;
  maxPayloadBytes: number;
  now(): number;
  emit(transition: TransitionRecord, run: RunRecord): void;
  worker: { poke(): void } | undefined;
}

/** Options of `Runtime.fork`. */
export interface ForkOptions {
  /** The first step the fork runs on today's code; the source's steps before it are kept. */
  fromStep: number;
  /** The fork's input. @default the source's input */
  input?: unknown;
  /** @default { kind: "user", id: "local" } */
  by?: Actor;
  /**
   * The agent module the new run is to be resumed with (`meta.module`, as the `module` start
   * option): set by the process that forks it with its own code (`cairn fork`, `cairn rerun`).
   * @default the source's
   */
  module?: string;
}

/** Options of `Runtime.rerun`. */
export type RerunOptions = Pick<ForkOptions, "by" | "module">;

/** What `fork` and `rerun` return: the new run, and the step it runs from. */
export interface ForkResult {
  runId: string;
  fromStep: number;
}

/** Forks `runId` from `options.fromStep` (see `Runtime.fork`). */
export function forkRun(host: ForkOperationsHost, runId: string, options: ForkOptions): Promise<ForkResult> {
  return makeFork(host, runId, { ...options, kind: "fork" });
}

/**
 * Reruns a FAILED run from its failed step (see `Runtime.rerun`): a fork from the step
 * `rerunPoint` names, recorded as a rerun.
 */
export async function rerunRun(host: ForkOperationsHost, runId: string, options: RerunOptions): Promise<ForkResult> {
  const source = await host.getRun(runId);
  if (source.state !== "FAILED") {
    throw new RunNotResumableError(
      `run ${runId} is ${source.state}; only a FAILED run is rerun from its failed step. Fork it from a step instead (\`cairn fork ${runId} --from-step <n>\`)`,
    );
  }
  const fromStep = rerunPoint(await host.backend.loadSteps(runId));
  return makeFork(host, runId, { ...options, fromStep, kind: "rerun" });
}

async function makeFork(
  host: ForkOperationsHost,
  runId: string,
  options: ForkOptions & { kind: "fork" | "rerun" },
): Promise<ForkResult> {
  const source = await host.getRun(runId);
  const id = newRunId();
  // Settled steps never change, so the journal read outside the backend's transaction is the one
  // the fork copies: `forkJournal` refuses a prefix holding a step or an effect still open.
  const steps = forkJournal(source, await host.backend.loadSteps(runId), options.fromStep, id);
  const input = forkInput(host, source, options);
  const by = options.by ?? { kind: "user", id: "local" };
  const at = host.now();
  const what = options.kind === "rerun" ? "rerun of" : "forked from";
  const { run, transition } = await host.backend.forkRun({
    run: {
      id,
      agent: source.agent,
      workflow: source.workflow,
      key: null,
      input,
      versions: host.versions(source),
      meta: forkMeta(source, options, id),
      actor: by,
      reason: `${what} run ${source.id} at step ${options.fromStep}`,
      at,
    },
    forkedFrom: { runId: source.id, fromStep: options.fromStep, kind: options.kind, by, at },
    steps,
  });
  host.emit(transition, run);
  host.worker?.poke();
  return { runId: run.id, fromStep: options.fromStep };
}

/** The fork's input: the source's, or the one given, checked against the workflow's schema when known. */
function forkInput(host: ForkOperationsHost, source: RunRecord, options: ForkOptions): Json {
  if (options.input === undefined) return source.input;
  const agent = host.agent(source.agent);
  if (agent) {
    const checked = parseWorkflowInput(agent, source.workflow, options.input, "No run was forked");
    if (!checked.ok) throw checked.error;
  }
  const what = `the input of the fork of run ${source.id}`;
  return toJson(options.input, what, host.maxPayloadBytes) ?? null;
}

/**
 * The fork's meta: the source's (with the module given), in a trace of its own that starts under
 * the active context (the source's trace is not continued: the fork is another run).
 */
function forkMeta(
  source: RunRecord,
  options: ForkOptions & { kind: "fork" | "rerun" },
  id: string,
): Record<string, Json> {
  const { trace: _, ...meta } = options.module === undefined ? source.meta : { ...source.meta, module: options.module };
  const started = startRunStartSpan(activeContext(), id, source.agent, source.workflow, options.kind);
  started.span.setAttribute("cairn.forked_from", source.id);
  const trace = storedTraceContext(started.context);
  started.span.end();
  return trace ? { ...meta, trace: { ...trace } } : meta;
}
