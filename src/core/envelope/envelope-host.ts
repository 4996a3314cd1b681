import type { Budget } from "../budget.ts";
import type { DomainCallInfo } from "../domain-provider.ts";
import type { RunEventBody } from "../events.ts";
import type { McpTools } from "../mcp-tools.ts";
import type { ModelProvider } from "../model-provider.ts";
import type { Policy } from "../policies.ts";
import type { PriceTable } from "../prices.ts";
import type { StepRateLimits } from "../rate-limits.ts";
import type { Json, ParentClosePolicy, StepRecord } from "../records.ts";
import type { RetryPolicy } from "../retry-policy.ts";
import type { SandboxProvider } from "../sandbox.ts";
import type { StoredTraceContext } from "../telemetry/trace-context.ts";

/**
 * Everything the envelope needs from outside, injected by the worker: `core/` does no I/O of
 * its own. Storage writes go through `saveSteps`, which is fenced by the run's lease epoch.
 */
export interface EnvelopeHost {
  /** Wall-clock milliseconds. */
  now(): number;
  randomUUID(): string;
  /** Uniform in [0, 1): used for recorded `ctx.random()` and retry jitter. */
  random(): number;
  /**
   * A turn of the event loop for everything else when this process has been busy for a while
   * (undefined when it has not): awaited before each new step, so a run whose steps never wait
   * on I/O does not hold up HTTP requests, timers and other runs for its whole length.
   */
  breathe?(): Promise<void> | undefined;
  /**
   * Called right before a step's function runs, after its start record committed: undefined when
   * this process still holds the run's lease with time to spare (judged locally, from its last
   * claim or renewal), else a promise that settles once the lease was renewed — or once the run
   * was stopped because it could not be (another worker owns it now). It never rejects; the
   * caller checks its stop signal after it. A worker whose event loop stalled past its lease must
   * not call a tool that another worker has already called.
   */
  holdLease?(): Promise<void> | undefined;
  /** Resolves after `ms`, or rejects with the signal's reason when it fires. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  /** Stores steps in one transaction (fenced); `sync` asks for a synchronous commit. */
  saveSteps(steps: readonly StepRecord[], sync: boolean): Promise<void>;
  /** Reads from a registered domain provider; throws `UnknownNameError` for an unknown domain. */
  readDomain(domain: string, entity: string, params: Record<string, unknown>, info: DomainCallInfo): Promise<unknown>;
  /** The named model, or the default; throws `UnknownNameError` when none is registered. */
  model(name: string | undefined): ModelProvider;
  /**
   * Creates a child run with this id (`ctx.spawn`), or does nothing when it exists already (a
   * replayed spawn whose result was not recorded).
   */
  spawn(child: {
    id: string;
    agent: string;
    workflow: string;
    input: Json;
    parentClosePolicy: ParentClosePolicy;
    /** What is left of the parent's budget: the child gets at most that. */
    budget: Budget;
    /** The trace context of the spawning attempt's span: the child's executions continue it. */
    trace?: StoredTraceContext | undefined;
  }): Promise<void>;
  /** Policies asked before every tool, model, domain and spawn call. */
  readonly policies: readonly Policy[];
  /** Model prices, for the cost of model calls. */
  readonly prices: PriceTable;
  /** Retry backoffs at least this long pause the run on a durable timer (awaiting_retry). */
  readonly retryPauseThresholdMs: number;
  /** Steps a run may take; a warning at 80 %, then `StepLimitError`. */
  readonly maxSteps: number;
  /**
   * Bytes of JSON text one payload the journal stores may take (step arguments and results,
   * heartbeat details, a run's output, a child's or successor's input, an approval's payload);
   * a larger one is refused with `PayloadTooLargeError`.
   */
  readonly maxPayloadBytes: number;
  /** Bytes of JSON a run's history may hold (`HistoryMeter`): a new step past it is refused. */
  readonly maxHistoryBytes: number;
  /** Events (steps, retried attempts, transitions) a run's history may hold. */
  readonly maxHistoryEvents: number;
  /**
   * The rate limits declared on the runtime, its agents' tools and its models, and the backend's
   * slots (DESIGN §4 *Rate limits*); undefined when none is declared.
   */
  readonly rateLimits?: StepRateLimits | undefined;
  /** Retry policy of domain steps. */
  readonly domainRetry: RetryPolicy | undefined;
  /** Retry policy of model steps. */
  readonly modelRetry: RetryPolicy | undefined;
  /** Per-attempt timeout of model calls that set none, over the provider's own. */
  readonly modelTimeoutMs: number | undefined;
  /** The MCP servers registered on the runtime, if any. */
  readonly mcp: McpTools | undefined;
  /**
   * The secret `name` from the runtime's secrets provider, remembered for redaction
   * (`rememberSecret`); `UnknownNameError` (`UNKNOWN_SECRET`) when there is none. Never journaled.
   */
  secret(name: string): Promise<string>;
  /**
   * Where `ctx.sandbox` makes sandboxes (the runtime's `sandbox` option), and the folder of each
   * command's whole output; undefined when the runtime has none.
   */
  readonly sandbox?: { provider: SandboxProvider; logDir: string } | undefined;
  /** Adds an event to the run's live stream (model output, not journaled). */
  emit(event: RunEventBody): void;
  log(level: "debug" | "info" | "warn" | "error", message: string, fields: Record<string, unknown>): void;
}
