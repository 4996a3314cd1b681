import { type AgentLike, toAgentDefinition } from "../agent/decorators.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
import type { EnvelopeHost } from "../core/envelope/envelope-host.ts";
import type { EnvelopeOutcome } from "../core/envelope/envelope-outcome.ts";
import { WorkflowEnvelope } from "../core/envelope/workflow-envelope.ts";
import type { SerializedError } from "../core/errors.ts";
import { silentLogger } from "../core/logger.ts";
import { DEFAULT_PRICES } from "../core/prices.ts";
import type { Json, RunRecord, StepRecord } from "../core/records.ts";
import type { RunContract } from "../core/run-contract.ts";

/**
 * `replayHistories` (DESIGN §4, "Replaying histories against new code"): recorded journals run
 * through the workflow code of now without executing any step, each divergence reported.
 */

/** A recorded run to replay: the run's identity and input, and its journal. */
export interface RecordedHistory {
  run: Pick<RunRecord, "id" | "agent" | "workflow" | "input"> & {
    state?: string | undefined;
    error?: SerializedError | null | undefined;
  };
  steps: readonly StepRecord[];
}

/** How the replay of one history went. */
export interface ReplayResult {
  runId: string;
  agent: string;
  workflow: string;
  /**
   * `ok`: the code asked for the history's steps in order (to the history's end, or to its own end
   * with every step reached); `diverged`: it asked for another step, or ended before a recorded one;
   * `failed`: it threw where the history did not end with that error; `skipped`: the agent or the
   * workflow is not in the code given.
   */
  status: "ok" | "diverged" | "failed" | "skipped";
  /** Steps of the history. */
  steps: number;
  /** The step at which the code left the history (`diverged`). */
  seq?: number;
  /** What the history holds there: `tool "charge"`, or null when it holds nothing. */
  history?: string | null;
  /** What the code asked for there, or null when it finished before. */
  called?: string | null;
  /** The divergence's message (history and code side by side), the error, or why it was skipped. */
  message?: string;
}

/** What {@link replayHistories} returns. */
export interface ReplayReport {
  results: ReplayResult[];
  /** The results that diverged or failed: a deploy of this code would strand those runs. */
  problems: ReplayResult[];
}

/** Options of {@link replayHistories}. */
export interface ReplayHistoriesOptions {
  /** The agents as the code defines them now. */
  agents: readonly AgentLike[];
  /** Recorded journals: exported run contracts (`cairn export`) or runs with their steps. */
  histories: Iterable<RecordedHistory | RunContract> | AsyncIterable<RecordedHistory | RunContract>;
}

/**
 * Replays each history through the current workflow code: every `ctx` call is matched with the
 * recorded step (kind and name, DESIGN §4) and given its recorded result; nothing is executed,
 * and a call past the history's end stops that replay (the run would go on from there). Reports
 * each run that diverges, with the step, what the history holds and what the code asked for.
 *
 * @example
 * import { replayHistories } from "cairn/testing";
 * const report = await replayHistories({ agents: [expenses], histories: [contract] });
 * expect(report.problems).toEqual([]);
 */
export async function replayHistories(options: ReplayHistoriesOptions): Promise<ReplayReport> {
  const agents = new Map(options.agents.map((a) => toAgentDefinition(a)).map((a) => [a.name, a]));
  const results: ReplayResult[] = [];
  for await (const item of options.histories) results.push(await replayOne(agents, asHistory(item)));
  return { results, problems: results.filter((r) => r.status === "diverged" || r.status === "failed") };
}

function asHistory(item: RecordedHistory | RunContract): RecordedHistory {
  if ("journal" in item) {
    const { run, journal, completion } = item;
    return { run: { ...run, state: completion.state, error: completion.error }, steps: journal.steps };
  }
  return item;
}

async function replayOne(agents: Map<string, AgentDefinition>, history: RecordedHistory): Promise<ReplayResult> {
  const { run } = history;
  const base = { runId: run.id, agent: run.agent, workflow: run.workflow, steps: history.steps.length };
  const agent = agents.get(run.agent);
  if (!agent || !Object.hasOwn(agent.workflows, run.workflow)) {
    const message = `the code has no workflow "${run.workflow}" of agent "${run.agent}"`;
    return { ...base, status: "skipped", message };
  }
  const envelope = new WorkflowEnvelope({ run: replayRun(run), agent, journal: history.steps, host: replayHost() });
  return { ...base, ...judge(await envelope.execute(), history) };
}

/** What an execution's outcome says of the history. */
function judge(
  outcome: EnvelopeOutcome,
  history: RecordedHistory,
): Omit<ReplayResult, "runId" | "agent" | "workflow" | "steps"> {
  if (outcome.kind !== "failed") return { status: "ok" };
  const error = outcome.error;
  if (error.code === "REPLAY_DIVERGENCE") {
    const data = error.data ?? {};
    return {
      status: "diverged",
      seq: data.seq as number,
      history: (data.history as string | null) ?? null,
      called: (data.called as string | null) ?? null,
      message: error.message,
    };
  }
  // The run failed the same way when it ran: the replay agrees with it.
  if (history.run.error && history.run.error.message === error.message) return { status: "ok" };
  return { status: "failed", message: `${error.code ? `[${error.code}] ` : ""}${error.message}` };
}

/** The record the envelope replays under: the history's run, nothing leased. */
function replayRun(run: RecordedHistory["run"]): RunRecord {
  return {
    id: run.id,
    agent: run.agent,
    workflow: run.workflow,
    key: null,
    state: "RUNNING",
    pausedReason: null,
    input: run.input as Json,
    output: undefined,
    error: undefined,
    epoch: 0,
    leaseOwner: null,
    leaseExpiresAt: null,
    recoveries: 0,
    lastTransitionId: 0,
    versions: { workflow: "replay", policy: null, runtime: "replay" },
    meta: {},
    parentRunId: null,
    parentClosePolicy: null,
    stopRequest: undefined,
    continuedFrom: null,
    continuedTo: null,
    usage: undefined,
    acceptance: undefined,
    createdAt: 0,
    updatedAt: 0,
  };
}

/** Reached when the code asks for a step past the history: the replay ends there. */
class HistoryEnd extends Error {}

const beyond = (what: string) => () => {
  throw new HistoryEnd(`${what} past the end of the history`);
};

/**
 * A host that executes nothing: a step's function runs only after its start record committed,
 * and `saveSteps` refuses every write, so the first step the history does not hold (or holds
 * unfinished) ends the replay instead of running.
 */
function replayHost(): EnvelopeHost {
  return {
    now: () => Date.now(),
    randomUUID: () => "00000000-0000-4000-8000-000000000000",
    random: () => 0.5,
    sleep: async () => {},
    saveSteps: () => Promise.reject(new HistoryEnd("a step past the end of the history")),
    readDomain: beyond("a domain read"),
    model: beyond("a model call"),
    spawn: beyond("a spawn"),
    secret: beyond("a secret"),
    policies: [],
    prices: DEFAULT_PRICES,
    retryPauseThresholdMs: Number.POSITIVE_INFINITY,
    maxSteps: Number.MAX_SAFE_INTEGER,
    maxPayloadBytes: Number.MAX_SAFE_INTEGER,
    maxHistoryBytes: Number.MAX_SAFE_INTEGER,
    maxHistoryEvents: Number.MAX_SAFE_INTEGER,
    domainRetry: undefined,
    modelRetry: undefined,
    modelTimeoutMs: undefined,
    mcp: undefined,
    emit: () => {},
    log: (level, message, fields) => silentLogger[level](fields, message),
  };
}
