import type { AgentLike } from "../agent/decorators.ts";
import type { RuntimeBackend } from "../backend/backend.ts";
import type { AgentDefinition, CompensateMode } from "../core/agent-definition.ts";
import { type Budget, mergeBudgets, validateBudget } from "../core/budget.ts";
import type { Clock } from "../core/clock.ts";
import type { DomainProvider } from "../core/domain-provider.ts";
import { InvalidInputError } from "../core/errors.ts";
import type { RunFlowOptions } from "../core/flow-control.ts";
import type { LegacyLogger, Logger } from "../core/logger.ts";
import type { McpServerConfig } from "../core/mcp-tools.ts";
import type { ModelProvider } from "../core/model-provider.ts";
import type { Policy } from "../core/policies.ts";
import type { ModelPrice } from "../core/prices.ts";
import type { RateLimitDeclaration, RateLimitSpec } from "../core/rate-limits.ts";
import type { Actor, Json, RunRecord, StepRecord, TransitionRecord, WaitRecord } from "../core/records.ts";
import type { RetentionPolicy } from "../core/retention.ts";
import type { RetryPolicy } from "../core/retry-policy.ts";
import type { JobSpec } from "../core/run-contract.ts";
import type { RuntimeSandboxOptions } from "../core/sandbox-handle.ts";
import { toJson } from "../core/serialize.ts";
import { checkText } from "../core/text.ts";
import type { WorkerOptions } from "../worker/worker-options.ts";
import type { SecretProvider } from "./secrets.ts";

/** The options of a {@link Runtime} and of the runs it starts, and the run's stored `meta`. */

/** Options of {@link Runtime}. */
export interface RuntimeOptions {
  /** Agents this runtime can run: `defineAgent` results or `@agent` classes. */
  agents: readonly AgentLike[];
  /** Where runs are stored. @default new InMemoryBackend() (nothing survives the process) */
  backend?: RuntimeBackend;
  /** Domain providers `ctx.domain(domain, …)` reads from, by domain name. @default {} */
  domains?: Record<string, DomainProvider>;
  /** Models `ctx.llm` calls, by name; `default` (or the only one) is used when a call names none. @default {} */
  models?: Record<string, ModelProvider>;
  /**
   * Named rate limits, shared by every worker on the backend (DESIGN §4 *Rate limits*): at most
   * `limit` calls per `per`, spaced evenly. A tool (`defineTool({ rateLimit: "search-api" })`), a
   * model (`openai("gpt-4o", { rateLimit: "openai" })`), a domain (`domainRateLimits`) or an MCP
   * server (its `rateLimit` in `mcp`) names one; several may share one. Each
   * attempt of such a step takes a slot just before it runs, and waits for it in process (the run
   * stays RUNNING; a cancel stops the wait). A name no limit here has is refused when the runtime
   * is made (`InvalidDefinitionError`). Needs a backend with the `rateLimits` role (memory,
   * SQLite, PostgreSQL).
   * @default {}
   * @example
   * rateLimits: { openai: { limit: 500, per: "1m" }, "search-api": { limit: 20, per: "1s" } }
   */
  rateLimits?: Record<string, RateLimitSpec>;
  /**
   * The rate limit of each domain's reads (`ctx.domain`), by domain name: a name of `rateLimits`,
   * or a limit of its own (kept under `domain:<domain>`). Each attempt of a read takes a slot just
   * before it runs, as a tool's does. A domain not in `domains` is refused when the runtime is made.
   * An MCP server's limit is its configuration's `rateLimit` (`mcp`). @default {}
   * @example
   * domainRateLimits: { crm: { limit: 10, per: "1s" }, billing: "search-api" }
   */
  domainRateLimits?: Record<string, RateLimitDeclaration>;
  /** Retry policy of `ctx.domain` steps. @default the tool defaults */
  domainRetry?: RetryPolicy;
  /** Retry policy of `ctx.llm` steps. @default the tool defaults */
  modelRetry?: RetryPolicy;
  /**
   * Per-attempt timeout of a model call that sets no `timeoutMs` of its own; a call that runs
   * past it is aborted and retried. @default the provider's `timeoutMs` (5 minutes for
   * `AiSdkModel`; none for the in-process scripted model)
   */
  modelTimeoutMs?: number;
  /**
   * The versions of what runs depend on beyond their code, recorded on every run and transition
   * and checked on resume (DESIGN §3): `authority` (the mandate or approval regime the runs act
   * under: a run resumed under another fails VERSION_MISMATCH, resumable once the right one is
   * deployed), `sandbox` and `context` (the prompt and model context; default: the names of the
   * runtime's models). A resume under another sandbox or context says so on its RUNNING transition.
   */
  versions?: { authority?: string; sandbox?: string; context?: string };
  /**
   * MCP servers whose tools `ctx.agentLoop({ mcp: [name] })` offers the model, each call a
   * step. Connected on first use, closed with the runtime. @default {}
   * @example
   * mcp: { files: { command: "npx", args: ["@modelcontextprotocol/server-filesystem", "./data"] } }
   */
  mcp?: Record<string, McpServerConfig>;
  /** The in-process worker, or `false` for a client-only runtime that never executes runs. @default {} */
  worker?: WorkerOptions | false;
  /**
   * Ended runs this runtime's worker deletes by itself (DESIGN §7, "Retention"), in bounded batches
   * every `every` (default an hour), stopped on shutdown; also what a run's contract says of its
   * retention. Needs the worker. @default none: runs are kept until `runtime.prune` or `cairn prune`
   * @example
   * retention: { olderThan: "30d", states: ["COMPLETED", "CANCELLED"], every: "6h" }
   */
  retention?: RetentionPolicy;
  /** How long `shutdown()` lets runs in flight finish before recording them INTERRUPTED. @default 10000 */
  shutdownGraceMs?: number;
  /**
   * Where the runtime logs: a pino logger as it is (`logger: pino()`), `createConsoleLogger({ level,
   * format })`, or any {@link Logger} (pino's shape: `info(fields, message)` and `child(bindings)`).
   * Every line about a run carries `runId`, `worker` and, about a step, `step` as fields, and is
   * cleaned of credentials before it reaches the logger. A {@link LegacyLogger} (the old
   * `(message, fields)` methods, without `child`) is still accepted: it is adapted, the fields
   * arriving as its second argument.
   * @default warnings and errors to stderr
   */
  logger?: Logger | LegacyLogger;
  /**
   * The time workflows see (`ctx.now`, timers, timeouts, expiries). A virtual clock from
   * `cairn/testing` makes days pass in milliseconds. @default the machine's clock
   */
  clock?: Clock;
  /** Retry backoffs at least this long pause the run (awaiting_retry) on a durable timer. @default 5000 */
  retryPauseThresholdMs?: number;
  /** Steps a run may take: a warning at 80 %, then `StepLimitError` (use `ctx.continueAsNew`). @default 10000 */
  maxSteps?: number;
  /**
   * Bytes of JSON text (UTF-8) one payload of the journal may take: a run's input and output, a
   * step's arguments and result, heartbeat details, a signal's payload, an answer, an approval's
   * payload. A larger one is refused with `PayloadTooLargeError`; a tool whose result is too
   * large fails at once (no retry). Keep large data elsewhere and pass a reference to it.
   * @default 16 MiB (16777216)
   */
  maxPayloadBytes?: number;
  /**
   * Bytes of JSON text (UTF-8) one run's history may hold: its input and its steps' arguments,
   * results and errors (what a replay reads back on every resume). A new step past it is refused
   * with `HistoryLimitError` (`HISTORY_LIMIT`, naming `ctx.continueAsNew`), and so is a step whose
   * arguments or result would take the history past it; a warning is logged at 80 %.
   * @default 50 MiB (52428800)
   */
  maxHistoryBytes?: number;
  /**
   * Events one run's history may hold: one per step, per retried attempt and per transition. A new
   * step past it is refused with `HistoryLimitError`; a warning is logged at 80 %.
   * @default 50000
   */
  maxHistoryEvents?: number;
  /**
   * Signals a run's inbox may hold unread (sent before anything waited for them). A signal past it
   * is refused to its sender with `SignalInboxFullError` (`SIGNAL_INBOX_FULL`, HTTP 409) and nothing
   * is stored; a signal a wait is open for is always taken.
   * @default 1000
   */
  maxUnreadSignals?: number;
  /**
   * Asked before every tool, model, domain and spawn call of every run (DESIGN §6): allow, deny
   * (the run ends BLOCKED naming the policy and its version) or require an approval. Their
   * versions are recorded on every run (`versions.policy`). @default []
   */
  policies?: readonly Policy[];
  /**
   * Model prices (USD per million tokens) by model id, over the built-in table: the cost of each
   * model call is recorded on its step and counted in budgets. @default the built-in table
   */
  prices?: Record<string, ModelPrice>;
  /**
   * Where a tool's `ctx.secret(name)` reads a secret, when it asks: never journaled, never
   * exported, and redacted from every error, model request and tool result the runtime stores.
   * @default the environment (`process.env[name]`)
   * @example
   * secrets: async (name) => (await vault.read(`cairn/${name}`))?.value
   */
  secrets?: SecretProvider;
  /**
   * Where `ctx.sandbox(name)` makes the run's sandboxes (DESIGN §4, *Sandboxes*): a provider of
   * `cairn/sandbox` and the folder of each command's whole output. Every sandbox of a run is
   * destroyed when the run ends, and the worker's sweep destroys those whose run has ended.
   * @default none: `ctx.sandbox` throws `SandboxUnavailableError` naming this option
   * @example
   * sandbox: { provider: new BubblewrapProvider({ dir: ".cairn/sandboxes" }), logDir: ".cairn/sandbox-logs" }
   */
  sandbox?: RuntimeSandboxOptions;
}

/** Everything recorded about a run. */
export interface RunHistory {
  run: RunRecord;
  transitions: TransitionRecord[];
  steps: StepRecord[];
  waits: WaitRecord[];
}

/**
 * Options of {@link Runtime.run}. `concurrencyKey` / `concurrencyLimit` / `priority` (flow
 * control, DESIGN §7) override the agent's `flow` defaults for this run.
 */
export interface StartOptions extends RunFlowOptions {
  /** Idempotency key: starting again with the same (agent, workflow, key) returns the existing run. */
  key?: string;
  /**
   * Data to keep with the run (shown by `cairn show`): JSON, checked as a payload is. The keys
   * the runtime reads back ({@link RESERVED_META_KEYS}: `module`, `compensate`, `budget`, `job`)
   * are refused here: set them with the options of the same names, which are checked.
   */
  meta?: Record<string, Json>;
  /**
   * The file of the agent module this run's agent comes from, recorded as `meta.module` so that
   * `cairn resume` imports it again. Only the process that starts the run names it (`cairn run`
   * sets the module it loaded; `cairn dev` / `cairn serve` the module they loaded the agent from):
   * the HTTP API has no field for it, since whatever file it names is executed by a later
   * `cairn resume`. @default none (resume then needs `--module`)
   */
  module?: string;
  /** Who starts the run. @default { kind: "user", id: "local" } */
  by?: Actor;
  /**
   * When the run undoes its applied effects (COMPENSATING): `on_failure`,
   * `on_failure_or_cancel` or `never`. @default the agent's `compensate`
   */
  compensate?: CompensateMode;
  /** Budgets of this run, per key over the agent's (tokens, costUsd, modelCalls, toolCalls, steps, wallTimeMs). */
  budget?: Budget;
  /**
   * A W3C `traceparent` the run's trace continues when no OpenTelemetry span is active here (the
   * HTTP server passes a request's header; a queue consumer, its message's). One that is not a
   * valid `traceparent` is ignored. @default the active span's context, if any
   */
  traceparent?: string;
  /** The W3C `tracestate` that goes with {@link StartOptions.traceparent}. */
  tracestate?: string;
  /**
   * What the run is for, as the run contract's `job` section shows it (`exportRun`); whatever is
   * not given there stays empty.
   */
  job?: JobSpec;
}

/**
 * The keys of a run's `meta` that the runtime and the CLI read back: `module` (the file `cairn
 * resume` imports), `compensate` (the run's compensation mode), `budget` (its caps) and `job`
 * (the run contract's job), and `trace` (the W3C trace context its executions' spans continue,
 * recorded from the span active when it starts). A caller's `meta` may not hold them: each is set by its own option,
 * which is checked, and `module` never comes from a caller's data.
 */
export const RESERVED_META_KEYS = ["module", "compensate", "budget", "job", "imported", "trace"] as const;

/** One of {@link RESERVED_META_KEYS}. */
export type ReservedMetaKey = (typeof RESERVED_META_KEYS)[number];

/** What to use instead of each reserved key of `meta`. */
const INSTEAD: { readonly [K in ReservedMetaKey]: string } = {
  module: "the `module` option, which only the process that starts the run sets (`cairn run` records its module)",
  compensate: "the `compensate` option",
  budget: "the `budget` option",
  job: "the `job` option",
  imported: "`runtime.importRun`, which records where an imported run came from",
  trace:
    "an OpenTelemetry span active when the run starts (or a `traceparent` header over HTTP): the run's trace context is recorded from it",
};

/** Why `meta` (a caller's) holds a reserved key, naming it and what to use instead; or undefined. */
export function reservedMetaProblem(meta: object): { key: ReservedMetaKey; message: string } | undefined {
  const key = RESERVED_META_KEYS.find((k) => Object.hasOwn(meta, k));
  if (key === undefined) return undefined;
  return {
    key,
    message: `meta.${key} is reserved: the runtime reads it back, so a caller's meta may not set it; use ${INSTEAD[key]}`,
  };
}

/**
 * The run's stored `meta`: the starter's, plus the run's own compensation mode, budget (merged
 * over its agent's and validated), job and module, which the worker, the export and `cairn
 * resume` read back.
 * @throws InvalidInputError for a `meta` that is not an object or holds a reserved key, a bad
 * `compensate`, `budget` or `module`; NotSerializableError / PayloadTooLargeError for a `meta`
 * that is not JSON (a BigInt, a cycle, Infinity, nesting past 512) or too large. Nothing is written.
 */
export function startMeta(
  agent: AgentDefinition,
  options: StartOptions,
  maxPayloadBytes: number,
): Record<string, Json> {
  const given: unknown = options.meta ?? {};
  if (given === null || typeof given !== "object" || Array.isArray(given)) {
    throw new InvalidInputError(
      `meta must be an object of JSON values (got ${given === null ? "null" : Array.isArray(given) ? "an array" : typeof given}); nothing was written`,
      [{ path: ["meta"], message: "expected an object" }],
    );
  }
  const reserved = reservedMetaProblem(given);
  if (reserved) {
    throw new InvalidInputError(`${reserved.message}; nothing was written`, [
      { path: ["meta", reserved.key], message: "reserved key" },
    ]);
  }
  // The JSON form: refuses what would not read back as given (a BigInt, a cycle, Infinity, too deep).
  const meta = toJson(given, "the run's meta", maxPayloadBytes) as Record<string, Json>;
  if (options.compensate !== undefined) {
    if (!["never", "on_failure", "on_failure_or_cancel"].includes(options.compensate)) {
      throw new InvalidInputError(
        `compensate must be "never", "on_failure" or "on_failure_or_cancel" (got ${JSON.stringify(options.compensate)})`,
        [{ path: ["compensate"], message: "unknown mode" }],
      );
    }
    meta.compensate = options.compensate;
  }
  const budget = mergeBudgets(agent.budget, validateBudget(options.budget ?? {}, "the run's budget"));
  if (Object.keys(budget).length > 0) meta.budget = budget as Json;
  if (options.job !== undefined) {
    meta.job = toJson(options.job, "the run's job", maxPayloadBytes) ?? null;
  }
  if (options.module !== undefined) meta.module = checkText(options.module, "the run's module");
  return meta;
}
