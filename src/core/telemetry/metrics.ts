import {
  type Attributes,
  type MeterProvider,
  metrics,
  type ObservableGauge,
  type Counter as OtelCounter,
  type Histogram as OtelHistogram,
} from "@opentelemetry/api";
import type { RunRecord, StepKind, StepRecord, TransitionRecord } from "../records.ts";
import { TERMINAL_STATES } from "../run-state.ts";
import { type Labels, MetricRegistry } from "./metric-registry.ts";

/**
 * Cairn's metrics (DESIGN §7c): each figure goes to the OpenTelemetry API's Meter `cairn` (a no-op
 * until the application registers an SDK) and to this process's {@link processMetrics}, which
 * `/metrics` serves in the Prometheus text format. The Meter's instruments are made again when
 * another MeterProvider is registered (the API has no proxy meter).
 */

const SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** This process's metrics, as `/metrics` serves them. */
export const processMetrics = new MetricRegistry();

const local = {
  runsStarted: processMetrics.counter("cairn_runs_started_total", "Runs started by this process, by agent."),
  runsEnded: processMetrics.counter(
    "cairn_runs_ended_total",
    "Runs this process moved to a terminal state, by state and agent.",
  ),
  runsPaused: processMetrics.counter("cairn_runs_paused_total", "Runs this process paused, by reason."),
  steps: processMetrics.histogram(
    "cairn_step_duration_seconds",
    "Duration of the steps this process executed (replayed steps not counted), by kind and status.",
    SECONDS,
  ),
  attempts: processMetrics.counter("cairn_step_attempts_total", "Attempts of steps, by kind and whether a retry."),
  effects: processMetrics.counter("cairn_effect_outcomes_total", "How effect steps ended, by effect status."),
  tokens: processMetrics.counter("cairn_model_tokens_total", "Model tokens, by model and type (input, output)."),
  cost: processMetrics.counter("cairn_model_cost_usd_total", "Model cost in US dollars, by model."),
  takeovers: processMetrics.counter(
    "cairn_lease_takeovers_total",
    "Runs this process took over from a worker whose lease lapsed or whose process is gone.",
  ),
  claimToStart: processMetrics.histogram(
    "cairn_claim_to_start_seconds",
    "Time from a run's claim by this process to its workflow starting to execute.",
    SECONDS,
  ),
};

interface Instruments {
  provider: MeterProvider;
  /** No MeterProvider registered (the API's no-op one): per-step figures skip the Meter. */
  noop: boolean;
  runsStarted: OtelCounter;
  runsEnded: OtelCounter;
  runsPaused: OtelCounter;
  steps: OtelHistogram;
  attempts: OtelCounter;
  effects: OtelCounter;
  tokens: OtelHistogram;
  cost: OtelCounter;
  takeovers: OtelCounter;
  claimToStart: OtelHistogram;
  backlog: ObservableGauge;
}

let instruments: Instruments | undefined;

/** A source of the backlog (runnable runs no worker holds), read by the observable gauge. */
let backlogSources: Array<() => number | undefined> = [];

/** The Meter's instruments for the MeterProvider registered now. */
function otel(): Instruments {
  const provider = metrics.getMeterProvider();
  if (instruments?.provider === provider) return instruments;
  const meter = provider.getMeter("cairn");
  const backlog = meter.createObservableGauge("cairn.runs.backlog", {
    description: "Runs that are runnable and that no worker holds (read from the backend, at most every few seconds).",
  });
  backlog.addCallback((result) => {
    for (const read of backlogSources) {
      const value = read();
      if (value !== undefined) result.observe(value);
    }
  });
  instruments = {
    provider,
    noop: provider.constructor?.name === "NoopMeterProvider",
    runsStarted: meter.createCounter("cairn.runs.started", { description: "Runs started." }),
    runsEnded: meter.createCounter("cairn.runs.ended", { description: "Runs that reached a terminal state." }),
    runsPaused: meter.createCounter("cairn.runs.paused", { description: "Runs paused, by reason." }),
    steps: meter.createHistogram("cairn.step.duration", { description: "Step duration.", unit: "s" }),
    attempts: meter.createCounter("cairn.step.attempts", { description: "Step attempts, by kind." }),
    effects: meter.createCounter("cairn.effect.outcomes", { description: "Effect outcomes." }),
    tokens: meter.createHistogram("gen_ai.client.token.usage", {
      description: "Tokens used by model calls.",
      unit: "{token}",
    }),
    cost: meter.createCounter("cairn.model.cost", { description: "Model cost.", unit: "USD" }),
    takeovers: meter.createCounter("cairn.lease.takeovers", { description: "Lease takeovers." }),
    claimToStart: meter.createHistogram("cairn.claim_to_start.duration", {
      description: "Time from a run's claim to its workflow starting.",
      unit: "s",
    }),
    backlog,
  };
  return instruments;
}

/** A transition this process made: runs started, ended (by state) and paused (by reason). */
export function runTransition(transition: TransitionRecord, run: RunRecord): void {
  if (transition.from === null) {
    count("runsStarted", { agent: run.agent });
  } else if (transition.to === "PAUSED") {
    count("runsPaused", { reason: transition.pausedReason ?? "unknown" });
  } else if (TERMINAL_STATES.has(transition.to)) {
    count("runsEnded", { state: transition.to, agent: run.agent });
  }
}

/** The labels of a step-duration series, from its key (`<kind>\0<status>`): made once per series. */
function stepLabels(key: string): Labels {
  const [kind = "", status = ""] = key.split("\u0000");
  return { kind, status };
}

/** The labels of an attempts series, from its key (`<kind>`, or `<kind>\x01` for retries). */
function attemptLabels(key: string): Labels {
  const retry = key.endsWith("\u0001");
  return { kind: retry ? key.slice(0, -1) : key, retry: String(retry) };
}

/**
 * The key of a step-duration series, made once per kind and status: the same string every time,
 * so the registry's lookup hashes no new string for each step.
 */
// Plain objects (fast properties): step kinds and statuses never name an Object.prototype member.
const stepKeys: Record<string, Record<string, string>> = {};
function stepKey(kind: StepKind, status: string): string {
  let byStatus = stepKeys[kind];
  if (byStatus === undefined) {
    byStatus = {};
    stepKeys[kind] = byStatus;
  }
  let key = byStatus[status];
  if (key === undefined) {
    key = `${kind}\u0000${status}`;
    byStatus[status] = key;
  }
  return key;
}

/** A step this process executed ended (or parked on a durable retry timer). */
export function stepEnded(step: StepRecord, parked: boolean): void {
  const status = parked ? "awaiting_retry" : step.status;
  const seconds = Math.max(0, ((step.endedAt ?? Date.now()) - step.startedAt) / 1000);
  local.steps.record(seconds, stepLabels, stepKey(step.kind, status));
  const meter = otel();
  if (!meter.noop) meter.steps.record(seconds, { "cairn.step.kind": step.kind, "cairn.step.status": status });
  if (step.effect && step.status !== "started") count("effects", { status: step.effect.status });
}

/** An attempt of a step of `kind` starts; `retry` from its second on. */
export function attemptStarted(kind: StepKind, retry: boolean): void {
  local.attempts.add(1, attemptLabels, retry ? `${kind}\u0001` : kind);
  const meter = otel();
  if (!meter.noop) meter.attempts.add(1, { "cairn.step.kind": kind, "cairn.retry": retry });
}

/** A model call answered: its tokens and cost. */
export function modelUsed(model: string, usage: { inputTokens: number; outputTokens: number }, costUsd: number): void {
  local.tokens.add(usage.inputTokens, { model, type: "input" });
  local.tokens.add(usage.outputTokens, { model, type: "output" });
  local.cost.add(costUsd, { model });
  const meter = otel();
  meter.tokens.record(usage.inputTokens, { "gen_ai.response.model": model, "gen_ai.token.type": "input" });
  meter.tokens.record(usage.outputTokens, { "gen_ai.response.model": model, "gen_ai.token.type": "output" });
  meter.cost.add(costUsd, { "gen_ai.response.model": model });
}

/** This process took a run over from a worker whose lease lapsed (or whose process is gone). */
export function leaseTakenOver(): void {
  count("takeovers", {});
}

/** A run's workflow starts executing `ms` after this process claimed it. */
export function claimedToStart(ms: number): void {
  local.claimToStart.record(ms / 1000);
  otel().claimToStart.record(ms / 1000);
}

/**
 * Adds a source of the backlog gauge (a runtime's backend, read at most every few seconds);
 * returns its removal.
 */
export function observeBacklog(read: () => number | undefined): () => void {
  otel();
  backlogSources = [...backlogSources, read];
  return () => {
    backlogSources = backlogSources.filter((r) => r !== read);
  };
}

type CounterName = "runsStarted" | "runsEnded" | "runsPaused" | "effects" | "takeovers";

function count(name: CounterName, labels: Labels): void {
  local[name].add(1, labels);
  const attributes: Attributes = {};
  for (const [key, value] of Object.entries(labels))
    attributes[`cairn.${key === "reason" ? "paused_reason" : key}`] = value;
  otel()[name].add(1, attributes);
}
