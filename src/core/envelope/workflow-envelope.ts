import type { AgentDefinition } from "../agent-definition.ts";
import { type AgentLoopOptions, type AgentLoopResult, runAgentLoop } from "../agent-loop.ts";
import type { ChildHandle, LlmClient, StepIdentity, ToolCallOptions, WorkflowContext } from "../context.ts";
import { digestText } from "../digest.ts";
import { type EffectSpec, effectSpec } from "../effect-steps.ts";
import {
  type CairnError,
  EffectUnresolvedError,
  NonRetryableError,
  type ReplayDivergenceError,
  type SerializedError,
  StepLimitError,
  UnknownNameError,
} from "../errors.ts";
import { HistoryMeter, historySize, jsonBytes, textBytes } from "../history-meter.ts";
import { parseInput, parseWorkflowInput } from "../input-schema.ts";
import type { McpTools } from "../mcp-tools.ts";
import type { GenerateRequest, ModelResponse } from "../model-messages.ts";
import type { Json, RunRecord, RunUsage, StepKind, StepRecord, WaitRecord } from "../records.ts";
import { redactJson } from "../redact.ts";
import { type RetryPolicy, resolveRetryPolicy } from "../retry-policy.ts";
import { deserializeError, jsonSnapshot, serializeError, toJson } from "../serialize.ts";
import { checkText, isStorableText } from "../text.ts";
import { divergenceError } from "./divergence.ts";
import type { EnvelopeHost } from "./envelope-host.ts";
import { Governor } from "./governor.ts";
import { JournalWriter } from "./journal-writer.ts";
import { loopTools } from "./loop-tools.ts";
import { modelAttempt } from "./model-attempt.ts";
import { executeStep, type StepExecution } from "./step-executor.ts";
import { ToolAttemptContext } from "./tool-context.ts";
import { type PauseOutcome, settleChild, type WaitSpec, WaitSteps } from "./wait-steps.ts";

/** Longest name a step takes (a tool, a signal, a domain entity, an approval's action, a model). */
const MAX_STEP_NAME_LENGTH = 512;

/** How an envelope's execution ended. */
export type EnvelopeOutcome =
  /**
   * `steps`: results not written yet, which the transition that completes the run commits with its
   * output (nothing is queued after them: the journal accepts no more writes).
   */
  | { kind: "completed"; output: Json; steps?: readonly StepRecord[] }
  | { kind: "failed"; error: SerializedError }
  /** The run was taken away (lease lost) or stopped (shutdown, cancellation) before it finished. */
  | { kind: "stopped"; reason: unknown }
  /**
   * Every step the workflow awaits is a wait: the run should pause. `waits` are the ones opened
   * in this execution (not stored yet), `blockedOn` the ids of all it is blocked on.
   */
  | PauseOutcome
  /** `ctx.continueAsNew(input)`. */
  | { kind: "continued"; input: Json }
  /** An effect's outcome is unknown and nothing could settle it: an operator must (`reconcile`). */
  | { kind: "needs_reconciliation"; error: SerializedError };

/** How compensating a run ended. */
export type CompensationOutcome =
  /** Every applied effect with a declared compensation was undone (`undone` names them). */
  | { kind: "compensated"; undone: string[] }
  /** Some could not be undone: `failed` names each with why. */
  | { kind: "compensation_failed"; undone: string[]; failed: string[] }
  | Extract<EnvelopeOutcome, { kind: "needs_reconciliation" | "stopped" }>;

/** The applied effects a compensation undoes, newest first (compensations themselves excluded). */
export function compensationTargets(steps: readonly StepRecord[]): StepRecord[] {
  return steps
    .filter(
      (s) =>
        s.kind === "tool" &&
        s.effect?.status === "applied" &&
        s.effect.compensate !== null &&
        s.effect.compensates === undefined,
    )
    .sort((a, b) => b.seq - a.seq);
}

/** A step in flight when a cancellation began, and how it ended. */
export interface InFlightStep extends StepIdentity {
  outcome: "completed" | "failed" | "unknown";
}

/**
 * The execution boundary around one run of a workflow (DESIGN §4). It replays the run's journal:
 * a `ctx` call whose step has a saved result returns that result without running; the first
 * call without one executes, recording its start before and its result after. Step numbers are
 * taken synchronously when a `ctx` method is called, so concurrent steps (`Promise.all`) get
 * the same numbers on every replay. Users never construct it; the worker does.
 */
export class WorkflowEnvelope {
  readonly #run: RunRecord;
  readonly #agent: AgentDefinition;
  readonly #host: EnvelopeHost;
  readonly #journal: Map<number, StepRecord>;
  readonly #history: StepRecord[];
  readonly #maxRecordedSeq: number;
  readonly #calls: StepIdentity[] = [];
  readonly #stop = new AbortController();
  /** Fired by `cancel()`: attempts see it; unlike `#stop`, results that still arrive are kept. */
  readonly #cancel = new AbortController();
  /**
   * Fired with the first of `#stop` and `#cancel` (by `stop()` and `cancel()`, their only callers):
   * what every step's attempts see. A controller of its own costs less than `AbortSignal.any`.
   */
  readonly #attempts = new AbortController();
  readonly #writer: JournalWriter;
  readonly #waitSteps: WaitSteps;
  /** Non-wait steps executing now (a run pauses only when none is). */
  #inflight = 0;
  /** Steps executing now, by seq: the evidence of a cancellation. */
  readonly #running = new Map<number, StepRecord>();
  #cancelled: StepRecord[] | undefined;
  /** Ends `execute()` with a pause or a continue-as-new. */
  #settle: ((outcome: EnvelopeOutcome) => void) | undefined;
  #seq = 0;
  #diverged: ReplayDivergenceError | undefined;
  /** Effect steps executing now: a run does not complete before they settle. */
  readonly #effectsInFlight = new Set<Promise<unknown>>();
  /** The error of the last failed attempt of each model step, for the retry event of the next. */
  readonly #modelErrors = new Map<number, string>();
  /** Policies and budget: a refusal ends the run BLOCKED. */
  readonly #governor: Governor;
  /** The size of the run's history against its limits (`maxHistoryBytes`, `maxHistoryEvents`). */
  readonly #meter: HistoryMeter;
  #blocked: CairnError | undefined;
  #finished = false;

  constructor(options: {
    run: RunRecord;
    agent: AgentDefinition;
    journal: readonly StepRecord[];
    waits?: readonly WaitRecord[];
    host: EnvelopeHost;
  }) {
    this.#run = options.run;
    this.#agent = options.agent;
    this.#host = options.host;
    this.#history = [...options.journal].sort((a, b) => a.seq - b.seq);
    this.#meter = new HistoryMeter({
      runId: options.run.id,
      limits: { maxHistoryBytes: options.host.maxHistoryBytes, maxHistoryEvents: options.host.maxHistoryEvents },
      loaded: historySize(options.run, this.#history),
      warn: (message) => options.host.log("warn", message, { runId: options.run.id }),
    });
    this.#waitSteps = new WaitSteps({
      run: options.run,
      host: options.host,
      meter: this.#meter,
      stored: options.waits ?? [],
      isIdle: () => this.#inflight === 0 && !this.#finished,
      pause: (outcome) => this.#settle?.(outcome),
    });
    this.#journal = new Map(this.#history.map((s) => [s.seq, s]));
    this.#maxRecordedSeq = this.#history.reduce((m, s) => Math.max(m, s.seq), 0);
    this.#governor = new Governor({
      run: options.run,
      policies: options.host.policies,
      prices: options.host.prices,
      journal: this.#history,
    });
    // A journal write that fails (a lost lease, a storage error) stops the run: the workflow must
    // not see it as a step's error and go on, with results it was handed possibly not stored.
    this.#writer = new JournalWriter((steps, sync) =>
      this.#host.saveSteps(steps, sync).catch((error: unknown) => {
        this.stop(error);
        throw error;
      }),
    );
  }

  /**
   * Commits the step records still queued (results are committed with the next write, see
   * `JournalWriter`). The worker calls it before recording INTERRUPTED on shutdown, so finished
   * tools are not run again.
   */
  flushJournal(): Promise<void> {
    return this.#writer.flush();
  }

  /**
   * Cancels the run: attempts in flight see their signal fire (a result that still arrives is
   * recorded), no new step starts, and `execute()` ends (`stopped` with `reason`) once no step is
   * in flight — or when the caller gives up waiting and calls `stop()`.
   */
  cancel(reason: Error): void {
    if (this.#cancel.signal.aborted) return;
    this.#cancelled = [...this.#running.values()];
    this.#cancel.abort(reason);
    if (!this.#attempts.signal.aborted) this.#attempts.abort(reason);
    if (this.#inflight === 0) this.stop(reason);
  }

  /** The steps that were in flight when `cancel()` was called, with how each has ended so far. */
  inFlightAtCancel(): InFlightStep[] {
    return (this.#cancelled ?? []).map((s) => ({
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
    return this.#governor.exact ? this.#governor.usage() : undefined;
  }

  /**
   * Governance refused a call: the run ends with `error` (the worker records BLOCKED) whatever
   * the workflow does with the error it is thrown.
   */
  #block(error: CairnError): never {
    if (!this.#blocked) {
      this.#blocked = error;
      this.#settle?.({ kind: "failed", error: serializeError(error) });
    }
    throw error;
  }

  /** Asks the policies about a call whose step will be the next one; see `Governor.ask`. */
  #ask(kind: "tool" | "llm" | "domain" | "spawn", name: string, args: unknown) {
    if (this.#blocked) throw this.#blocked;
    try {
      return this.#governor.ask(kind, name, args, this.#seq + 1);
    } catch (error) {
      return this.#block(error as CairnError);
    }
  }

  /** Fired when the run is stopped; every attempt in flight sees it. */
  get signal(): AbortSignal {
    return this.#stop.signal;
  }

  /**
   * Stops the run where it is: attempts in flight are aborted, nothing more is written, and
   * `execute()` resolves with `stopped`.
   */
  stop(reason: unknown): void {
    if (!this.#stop.signal.aborted) this.#stop.abort(reason);
    if (!this.#attempts.signal.aborted) this.#attempts.abort(reason);
  }

  /** Runs (or replays) the workflow to its end. Never rejects. */
  async execute(): Promise<EnvelopeOutcome> {
    const workflow = this.#agent.workflows[this.#run.workflow];
    if (!workflow) {
      const known = Object.keys(this.#agent.workflows).join(", ");
      const error = new UnknownNameError(
        "UNKNOWN_WORKFLOW",
        `unknown workflow "${this.#run.workflow}" in agent "${this.#agent.name}" (known: ${known})`,
      );
      return { kind: "failed", error: serializeError(error) };
    }
    // A declared input schema is checked on every execution: the workflow gets what it parses to
    // (defaults filled in), and an input it refuses fails the run before any of its code runs.
    const parsed = parseWorkflowInput(this.#agent, this.#run.workflow, this.#run.input, "The workflow did not run");
    if (!parsed.ok) return { kind: "failed", error: serializeError(parsed.error) };
    const input = parsed.value;
    const ctx = this.#workflowContext();
    return this.#conclude(async (): Promise<EnvelopeOutcome> => {
      let output: unknown;
      try {
        output = await workflow(ctx, input);
      } catch (error) {
        return this.#outcome({ error });
      }
      // No run completes with an effect whose outcome is open: one the workflow did not await is
      // waited for (one that ends unknown sends the run to NEEDS_RECONCILIATION instead).
      while (this.#effectsInFlight.size > 0) await Promise.allSettled([...this.#effectsInFlight]);
      return this.#outcome({ output });
    });
  }

  /**
   * Runs `work` (the workflow, or the compensations) until it ends, the run is stopped, or a step
   * settles the execution (a pause, a continue-as-new, an unresolved effect, a governance refusal);
   * then commits what is queued and abandons what is still in flight.
   */
  async #conclude<O extends { kind: string }>(work: () => Promise<O>): Promise<O | EnvelopeOutcome> {
    const stopped = new Promise<EnvelopeOutcome>((resolve) => {
      // A divergence stops the run too (so attempts in flight end), but it is a failure to record.
      const onStop = () =>
        resolve(
          this.#diverged
            ? { kind: "failed", error: serializeError(this.#diverged) }
            : { kind: "stopped", reason: this.#stop.signal.reason },
        );
      if (this.#stop.signal.aborted) onStop();
      else this.#stop.signal.addEventListener("abort", onStop, { once: true });
    });
    const settled = new Promise<EnvelopeOutcome>((resolve) => {
      this.#settle = resolve;
    });
    let outcome: O | EnvelopeOutcome = await Promise.race([work(), stopped, settled]);
    this.#finished = true;
    if (outcome.kind !== "stopped") {
      // The run's final transition must not overtake the results it reports: a completed run's
      // transition carries those still queued, any other outcome writes them first.
      try {
        if (outcome.kind === "completed") outcome = { ...outcome, steps: await this.#writer.drain() };
        else await this.#writer.flush();
      } catch (error) {
        outcome = { kind: "stopped", reason: error };
      }
      // Steps the workflow started and did not await are abandoned: their signal fires and
      // nothing they do is written after the run's end (or its pause: it is replayed later).
      this.#writer.close();
      this.stop(new Error(`run ${this.#run.id} ${outcome.kind}; steps still in flight are abandoned`));
    }
    return outcome;
  }

  #outcome(result: { output?: unknown; error?: unknown }): EnvelopeOutcome {
    if (this.#diverged) return { kind: "failed", error: serializeError(this.#diverged) };
    if (this.#blocked) return { kind: "failed", error: serializeError(this.#blocked) };
    if (this.#stop.signal.aborted) return { kind: "stopped", reason: this.#stop.signal.reason };
    // Completed steps the code never reached mean the code changed under the run.
    // (A compensation's own steps come after the workflow's: the workflow never calls them.)
    const unreached = this.#history.find(
      (s) => s.seq > this.#seq && s.status !== "started" && s.effect?.compensates === undefined,
    );
    if (unreached) {
      const error = divergenceError({
        runId: this.#run.id,
        seq: unreached.seq,
        recorded: unreached,
        called: undefined,
        history: this.#history,
        calls: this.#calls,
      });
      return { kind: "failed", error: serializeError(error) };
    }
    if ("error" in result) return { kind: "failed", error: serializeError(result.error) };
    try {
      return {
        kind: "completed",
        output:
          toJson(
            result.output,
            `the output of workflow "${this.#run.workflow}" (run ${this.#run.id})`,
            this.#host.maxPayloadBytes,
          ) ?? null,
      };
    } catch (error) {
      return { kind: "failed", error: serializeError(error) };
    }
  }

  #workflowContext(): WorkflowContext {
    const envelope = this;
    const run = this.#run;
    const llm: LlmClient = {
      generate: async (request) => (await this.#llmStep(request)).text,
      chat: (request) => this.#llmStep(request),
    };
    return {
      runId: run.id,
      agent: run.agent,
      workflow: run.workflow,
      get isReplaying() {
        return envelope.#seq < envelope.#maxRecordedSeq;
      },
      llm,
      tool: (name: string, args: unknown, options?: ToolCallOptions) => this.#toolStep(name, args, options),
      agentLoop: (options: AgentLoopOptions) => this.#agentLoop(options),
      domain: <R>(domain: string, entity: string, params: Record<string, unknown> = {}) =>
        this.#governed("domain", "domain", `${domain}.${entity}`, params, (begun) =>
          this.#step<R>(
            "domain",
            `${domain}.${entity}`,
            params,
            {
              policy: this.#host.domainRetry,
              run: ({ signal }) =>
                this.#host.readDomain(domain, entity, params, { runId: run.id, signal }) as Promise<R>,
            },
            begun,
          ),
        ),
      now: async () => new Date(await this.#valueStep("now", () => this.#host.now())),
      random: () => this.#valueStep("random", () => this.#host.random()),
      uuid: () => this.#valueStep("uuid", () => this.#host.randomUUID()),
      log: (message, fields) => this.#host.log("info", message, { runId: run.id, ...fields }),
      waitForSignal: (name: string, options?: { timeoutMs?: number }) =>
        this.#wait(() => this.#waitSteps.signal(name, options)),
      askUser: (question: string, options?: Parameters<WaitSteps["ask"]>[1]) =>
        this.#wait(() => this.#waitSteps.ask(question, options)),
      sleep: (ms: number) => this.#wait(() => this.#waitSteps.sleep(ms)),
      sleepUntil: (at: Date | number) => this.#wait(() => this.#waitSteps.sleepUntil(at)),
      requestApproval: (request: Parameters<WaitSteps["approval"]>[0]) =>
        this.#wait(() => this.#waitSteps.approval(request)),
      spawn: (
        agent: string,
        workflow: string,
        input: unknown,
        options?: { parentClosePolicy?: "suspend" | "cancel" | "abandon" },
      ) => this.#spawn(agent, workflow, input, options?.parentClosePolicy ?? "suspend"),
      patched: (changeId: string) => this.#patched(changeId),
      continueAsNew: (input: unknown) => {
        const json = toJson(input, `the input of continueAsNew (run ${run.id})`, this.#host.maxPayloadBytes) ?? null;
        if (this.#diverged) return Promise.reject(this.#diverged);
        this.#settle?.({ kind: "continued", input: json });
        return new Promise<never>(() => {});
      },
    } as WorkflowContext;
  }

  /** A wait step: begun now (its seq taken synchronously), then resolved, replayed or paused on. */
  #wait<T>(make: () => WaitSpec<T>, begun?: { seq: number; recorded: StepRecord | undefined }): Promise<T> {
    let started: { seq: number; recorded: StepRecord | undefined };
    let spec: WaitSpec<T>;
    try {
      spec = make();
      started = begun ?? this.#begin("wait", spec.stepName);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#waitSteps.run(spec, started, this.#writer, (seq, at) =>
      this.#newStep(seq, "wait", spec.stepName, spec.args, at),
    );
  }

  #spawn(
    agent: string,
    workflow: string,
    input: unknown,
    policy: "suspend" | "cancel" | "abandon",
  ): Promise<ChildHandle> {
    return this.#governed("spawn", "child", `${agent}.${workflow}`, input, (approved) => {
      let begun: { seq: number; recorded: StepRecord | undefined };
      try {
        begun = approved ?? this.#begin("child", `${agent}.${workflow}`);
      } catch (error) {
        return Promise.reject(error);
      }
      return this.#spawnStep(agent, workflow, input, policy, begun);
    });
  }

  #spawnStep(
    agent: string,
    workflow: string,
    input: unknown,
    policy: "suspend" | "cancel" | "abandon",
    begun: { seq: number; recorded: StepRecord | undefined },
  ): Promise<ChildHandle> {
    const childId = `${this.#run.id}.${begun.seq}`;
    const json =
      toJson(
        input,
        `the input of child ${agent}.${workflow} (run ${this.#run.id}, step ${begun.seq})`,
        this.#host.maxPayloadBytes,
      ) ?? null;
    const handle: ChildHandle = {
      runId: childId,
      // A child that continued as new is followed along its chain, one wait step per run.
      result: async () => {
        for (let runId = childId; ; ) {
          const ending = await this.#wait(() => this.#waitSteps.child(runId));
          if (ending.state !== "COMPLETED" || !ending.continuedTo) return settleChild(childId, ending);
          runId = ending.continuedTo;
        }
      },
    };
    return this.#step(
      "child",
      `${agent}.${workflow}`,
      { agent, workflow, input: json, parentClosePolicy: policy },
      {
        policy: undefined,
        run: async () => {
          await this.#host.spawn({
            id: childId,
            agent,
            workflow,
            input: json,
            parentClosePolicy: policy,
            budget: this.#governor.remaining(this.#host.now()),
          });
          return { runId: childId };
        },
      },
      begun,
    ).then(() => handle);
  }

  /**
   * True on the new code path: the run reached this point with this code. On replay, true only
   * when the history holds this marker at this point; a history that holds another step there
   * was written by the old code, so false (and no step number is taken).
   */
  #patched(changeId: string): boolean {
    const name = changeId;
    const next = this.#journal.get(this.#seq + 1);
    if (next && !(next.kind === "marker" && next.name === name)) return false;
    const { seq, recorded } = this.#begin("marker", name);
    if (!recorded) {
      const at = this.#host.now();
      this.#meter.add(jsonBytes(null) + jsonBytes(true), 0);
      this.#writer.later(
        { ...this.#newStep(seq, "marker", name, null, at), status: "completed", result: true, endedAt: at },
        false,
      );
    }
    return true;
  }

  /** Takes the next step number and checks the call against the journal. */
  #begin(kind: StepKind, name: string): { seq: number; recorded: StepRecord | undefined } {
    if (this.#finished) {
      throw new Error(`ctx.${kind}("${name}") was called after the workflow finished; await every ctx call`);
    }
    if (this.#diverged) throw this.#diverged;
    if (this.#cancel.signal.aborted) throw this.#cancel.signal.reason;
    // A name is stored as text (a signal's name, a domain's entity, an approval's action).
    if (!isStorableText(name) || name.length > MAX_STEP_NAME_LENGTH) {
      checkText(name, `the name of ${kind} step "${name}" (run ${this.#run.id})`, { maxLength: MAX_STEP_NAME_LENGTH });
    }
    const seq = ++this.#seq;
    if (seq > this.#host.maxSteps) {
      throw new StepLimitError(
        `run ${this.#run.id} reached its limit of ${this.#host.maxSteps} steps; carry the state over with ctx.continueAsNew(state) to start a fresh run, or raise the runtime's maxSteps`,
      );
    }
    if (seq === Math.floor(this.#host.maxSteps * 0.8) && seq > this.#maxRecordedSeq) {
      this.#host.log(
        "warn",
        `run ${this.#run.id} has taken ${seq} of its ${this.#host.maxSteps} steps; use ctx.continueAsNew(state) before it reaches the limit`,
        { runId: this.#run.id, seq },
      );
    }
    this.#calls.push({ seq, kind, name });
    const recorded = this.#journal.get(seq);
    if (!recorded) {
      // A new step: refused once the history is at a limit (HistoryLimitError, like StepLimitError).
      this.#meter.newStep();
      // The budget is checked before it and it counts from now on.
      const exceeded = this.#governor.check(kind, this.#host.now());
      if (exceeded) this.#block(exceeded);
      this.#governor.started(kind);
    }
    if (recorded && (recorded.kind !== kind || recorded.name !== name)) {
      this.#diverged = divergenceError({
        runId: this.#run.id,
        seq,
        recorded,
        called: { seq, kind, name },
        history: this.#history,
        calls: this.#calls,
      });
      this.stop(this.#diverged);
      throw this.#diverged;
    }
    return { seq, recorded };
  }

  async #valueStep<T extends Json>(name: "now" | "random" | "uuid", produce: () => T): Promise<T> {
    const { seq, recorded } = this.#begin("value", name);
    if (recorded?.status === "completed") return recorded.result as T;
    const value = produce();
    const at = this.#host.now();
    this.#meter.add(jsonBytes(null) + jsonBytes(value), 0);
    // A result like any other: the commit that carries it must be synchronous. The next step's
    // start record rides on that commit and its function may see the value (a uuid used as an
    // idempotency key); a cheaper commit lost to a power loss would let the replay make another.
    // In a sequential workflow this costs no extra commit: it is the one the next step makes.
    this.#writer.later(
      { ...this.#newStep(seq, "value", name, null, at), status: "completed", result: value, endedAt: at },
      true,
    );
    return value;
  }

  #toolStep(
    name: string,
    args: unknown,
    options: ToolCallOptions | undefined,
    compensation?: { begun: { seq: number; recorded: StepRecord | undefined }; compensates: number },
  ): Promise<unknown> {
    const compensates = compensation?.compensates;
    const tool = this.#agent.tools[name];
    if (!tool) {
      const known = Object.keys(this.#agent.tools).join(", ") || "none";
      return Promise.reject(
        new UnknownNameError("UNKNOWN_TOOL", `unknown tool "${name}" in agent "${this.#agent.name}" (known: ${known})`),
      );
    }
    let parsed: unknown = args;
    if (tool.input) {
      const result = parseInput(
        tool.input,
        args,
        `invalid input for tool "${name}" of agent "${this.#agent.name}"`,
        "The tool did not run; pass arguments that match its input schema",
      );
      if (!result.ok) return Promise.reject(result.error);
      parsed = result.value;
    }
    let approvalBegun: { seq: number; recorded: StepRecord | undefined } | undefined;
    let toolBegun: { seq: number; recorded: StepRecord | undefined } | undefined;
    let approval: { action: string; approvers: readonly string[]; expiresInMs: number } | undefined;
    try {
      // The tool's own approval, else one a policy requires (a denial ends the run here).
      const asked = compensation ? undefined : this.#ask("tool", name, args);
      approval = compensation
        ? undefined
        : tool.approval
          ? {
              action: tool.approval.action ?? `tool:${name}`,
              approvers: tool.approval.approvers ?? [],
              expiresInMs: tool.approval.expiresInMs,
            }
          : asked;
      if (approval) {
        // Both step numbers are taken now, so concurrent calls replay in the same order whatever
        // order their approvals come in.
        approvalBegun = this.#begin("wait", `approval:${approval.action}`);
        toolBegun = this.#begin("tool", name);
      }
    } catch (error) {
      return Promise.reject(error);
    }
    const toolSpec = {
      policy: options?.retry ?? tool.retry,
      startToCloseTimeoutMs: options?.startToCloseTimeoutMs ?? tool.startToCloseTimeoutMs,
      heartbeatTimeoutMs: tool.heartbeatTimeoutMs,
      run: (attempt: StepExecution) => tool.run(new ToolAttemptContext(this.#run, name, attempt, this.#host), parsed),
      effect: tool.effect ? (seq: number) => this.#effect(name, parsed, seq, compensates) : undefined,
    };
    const runTool = () => this.#step("tool", name, args, toolSpec, toolBegun);
    if (approval && approvalBegun) {
      const needed = approval;
      const spec = () =>
        this.#waitSteps.approval({
          action: needed.action,
          payload: args,
          approvers: needed.approvers,
          expiresInMs: needed.expiresInMs,
        });
      return this.#wait(spec, approvalBegun).then(runTool);
    }
    return this.#step("tool", name, args, toolSpec, compensation?.begun);
  }

  /**
   * Undoes the run's applied effects that declare `compensate`, newest first, each compensation
   * an effect step of its own (linked by `effect.compensates`). Called by the worker on a fresh
   * envelope once the run is COMPENSATING: the journal says what is done already (a compensation
   * that completed is not run again; one that was cut off is settled like any effect).
   */
  async compensate(): Promise<CompensationOutcome> {
    const targets = compensationTargets(this.#history);
    const done = new Map(
      this.#history.filter((s) => s.effect?.compensates !== undefined).map((s) => [s.effect?.compensates, s]),
    );
    let next = this.#maxRecordedSeq;
    this.#meter.stopRefusing();
    const undone: string[] = [];
    const failed: string[] = [];
    const outcome = await this.#conclude(async (): Promise<CompensationOutcome> => {
      for (const target of targets) {
        const effect = target.effect as NonNullable<StepRecord["effect"]>;
        const declared = this.#agent.tools[target.name]?.effect?.compensate;
        const tool = typeof declared === "string" ? declared : (declared?.tool ?? effect.compensate ?? "");
        const label = `${effect.id} (${target.name}) by ${tool}`;
        const recorded = done.get(target.seq);
        const seq = recorded?.seq ?? ++next;
        if (!this.#agent.tools[tool]) {
          failed.push(`${label}: agent "${this.#agent.name}" has no tool "${tool}"`);
          continue;
        }
        try {
          const args =
            typeof declared === "object" && declared.args ? declared.args(target.args, target.result) : target.args;
          await this.#toolStep(tool, args, undefined, {
            begun: { seq, recorded: recorded?.kind === "tool" && recorded.name === tool ? recorded : undefined },
            compensates: target.seq,
          });
          undone.push(label);
        } catch (error) {
          if (this.#stop.signal.aborted) throw error;
          failed.push(`${label}: ${(error as Error)?.message ?? String(error)}`);
        }
      }
      return failed.length === 0 ? { kind: "compensated", undone } : { kind: "compensation_failed", undone, failed };
    });
    if (outcome.kind === "compensated" || outcome.kind === "compensation_failed") return outcome;
    if (outcome.kind === "needs_reconciliation" || outcome.kind === "stopped") return outcome;
    return { kind: "stopped", reason: new Error(`unexpected outcome ${outcome.kind} while compensating`) };
  }

  /** The effect spec of a call of effect tool `name` at step `seq`. */
  #effect(name: string, args: unknown, seq: number, compensates: number | undefined): EffectSpec {
    const declared = this.#agent.tools[name]?.effect;
    if (!declared) throw new Error(`tool "${name}" declares no effect`);
    return effectSpec({
      runId: this.#run.id,
      agent: this.#agent.name,
      tool: name,
      declared,
      args,
      seq,
      now: () => this.#host.now(),
      maxPayloadBytes: this.#host.maxPayloadBytes,
      compensates,
      unresolved: (step, why) => {
        const effect = step.effect;
        const error = new EffectUnresolvedError(
          `the outcome of effect ${effect?.id ?? `e${seq}`} (tool "${name}", key ${effect?.idempotencyKey ?? "?"}) is unknown: ${why}. Find out whether it happened, then: cairn reconcile ${this.#run.id} ${effect?.id ?? `e${seq}`} --outcome applied|not_applied`,
          { effectId: effect?.id ?? `e${seq}` },
        );
        this.#settle?.({ kind: "needs_reconciliation", error: serializeError(error) });
        return new Promise<never>(() => {});
      },
    });
  }

  #llmStep(request: GenerateRequest): Promise<ModelResponse> {
    // Named by the model key the code asked for, not by the provider behind it, so swapping the
    // provider under runs in flight does not make their recorded calls diverge.
    const name = request.model ?? "default";
    if (request.maxOutputTokens !== undefined && !this.#journal.get(this.#seq + 1)) {
      // Refused before it is made when its declared maximum output could overshoot the cost budget.
      let provider: string | undefined;
      try {
        provider = this.#host.model(request.model).name;
      } catch {
        provider = undefined;
      }
      const exceeded = this.#governor.check("llm", this.#host.now(), {
        name: provider?.slice(provider.indexOf(":") + 1),
        maxOutputTokens: request.maxOutputTokens,
      });
      if (exceeded) {
        try {
          this.#block(exceeded);
        } catch (error) {
          return Promise.reject(error);
        }
      }
    }
    return this.#governed("llm", "llm", name, request, (begun) =>
      this.#step<ModelResponse>(
        "llm",
        name,
        request,
        {
          policy: this.#host.modelRetry,
          startToCloseTimeoutMs: request.timeoutMs ?? this.#host.modelTimeoutMs ?? this.#modelTimeout(request.model),
          run: (attempt) =>
            modelAttempt({
              provider: this.#host.model(request.model),
              request,
              attempt,
              emit: this.#host.emit,
              lastErrors: this.#modelErrors,
              cost: (model, usage) => this.#governor.cost(model, usage),
            }),
        },
        begun,
      ),
    );
  }

  /** The provider's own per-attempt timeout; none when the model is unknown (the attempt says so). */
  #modelTimeout(name: string | undefined): number | undefined {
    try {
      return this.#host.model(name).timeoutMs;
    } catch {
      return undefined;
    }
  }

  /** The loop's view of this run: the agent's tools and the MCP servers' tools, and model steps. */
  #agentLoop(options: AgentLoopOptions): Promise<AgentLoopResult> {
    return runAgentLoop(
      {
        generate: (request) => this.#llmStep(request),
        tools: (o) =>
          loopTools(o, this.#agent, this.#host.mcp, {
            callTool: (name, args) => this.#toolStep(name, args, undefined),
            callMcp: (mcp, server, tool, name, args) => this.#mcpStep(mcp, server, tool, name, args),
          }),
      },
      options,
    );
  }

  /** A call of an MCP server's tool: a `tool` step named `<server>__<tool>`, asked about like any tool. */
  #mcpStep(mcp: McpTools, server: string, tool: string, name: string, args: Json): Promise<unknown> {
    return this.#governed("tool", "tool", name, args, (begun) =>
      this.#step(
        "tool",
        name,
        args,
        {
          policy: undefined,
          run: async (attempt) => {
            const input = args && typeof args === "object" && !Array.isArray(args) ? args : {};
            const result = await mcp.call(server, tool, input, attempt.signal);
            // The tool ran and said it failed: that is its answer, not worth a retry.
            if (result.isError) throw new NonRetryableError(result.text || `MCP tool ${server}/${tool} failed`);
            return result.text;
          },
        },
        begun,
      ),
    );
  }

  /**
   * A call the policies are asked about first: a denial ends the run BLOCKED; an approval they
   * require is a wait step taken before the call's own step (both numbers taken now).
   */
  #governed<R>(
    kind: "tool" | "llm" | "domain" | "spawn",
    stepKind: StepKind,
    name: string,
    args: unknown,
    go: (begun: { seq: number; recorded: StepRecord | undefined } | undefined) => Promise<R>,
  ): Promise<R> {
    let approval: { action: string; approvers: string[]; expiresInMs: number } | undefined;
    let approvalBegun: { seq: number; recorded: StepRecord | undefined } | undefined;
    let begun: { seq: number; recorded: StepRecord | undefined } | undefined;
    try {
      approval = this.#ask(kind, name, args);
      if (approval) {
        approvalBegun = this.#begin("wait", `approval:${approval.action}`);
        begun = this.#begin(stepKind, name);
      }
    } catch (error) {
      return Promise.reject(error);
    }
    if (!approval || !approvalBegun) return go(undefined);
    const needed = approval;
    return this.#wait(
      () =>
        this.#waitSteps.approval({
          action: needed.action,
          payload: args,
          approvers: needed.approvers,
          expiresInMs: needed.expiresInMs,
        }),
      approvalBegun,
    ).then(() => go(begun));
  }

  /** A journaled step: replayed from its saved result, or executed with start and result records. */
  async #step<R>(
    kind: StepKind,
    name: string,
    args: unknown,
    spec: {
      policy: RetryPolicy | undefined;
      startToCloseTimeoutMs?: number | undefined;
      heartbeatTimeoutMs?: number | undefined;
      run: (attempt: StepExecution) => Promise<R> | R;
      /** The step is an effect: its spec, built once its seq is known. */
      effect?: ((seq: number) => EffectSpec) | undefined;
    },
    begun?: { seq: number; recorded: StepRecord | undefined },
  ): Promise<R> {
    const { seq, recorded } = begun ?? this.#begin(kind, name);
    let snapshot = jsonSnapshot(
      args ?? null,
      `the arguments of ${kind} "${name}" (run ${this.#run.id}, step ${seq})`,
      this.#host.maxPayloadBytes,
    );
    // A model request is journaled without the credentials it may quote (the provider gets it whole).
    if (kind === "llm") snapshot = redactedSnapshot(snapshot);
    const argsJson = snapshot.json ?? null;
    const argsDigest = digestText(snapshot.text);
    if (!recorded) {
      this.#meter.admit(
        textBytes(snapshot.text),
        `the arguments of ${kind} "${name}" (run ${this.#run.id}, step ${seq})`,
      );
    }
    if (recorded) {
      if (recorded.argsDigest !== argsDigest) {
        this.#host.log("warn", `step ${seq} (${kind} "${name}") is replayed with different arguments`, {
          runId: this.#run.id,
          seq,
        });
      }
      if (recorded.status === "completed") return recorded.result as R;
      if (recorded.status === "failed") throw replayedFailure(recorded);
    }
    const step: StepRecord = recorded
      ? { ...recorded, attempts: [...recorded.attempts] }
      : { ...this.#newStep(seq, kind, name, argsJson, this.#host.now()), argsDigest };
    this.#inflight++;
    this.#running.set(seq, step);
    let parked = false;
    const leave = () => {
      this.#inflight--;
      this.#running.delete(seq);
      if (this.#cancel.signal.aborted && this.#inflight === 0) this.stop(this.#cancel.signal.reason);
      else this.#waitSteps.check();
    };
    try {
      const executing = executeStep<R>({
        step,
        host: this.#host,
        writer: this.#writer,
        history: this.#meter,
        stop: this.#stop.signal,
        cancel: this.#cancel.signal,
        attemptSignal: this.#attempts.signal,
        policy: resolveRetryPolicy(spec.policy),
        limits: {
          startToCloseTimeoutMs: spec.startToCloseTimeoutMs,
          heartbeatTimeoutMs: spec.heartbeatTimeoutMs,
          label: `${kind} "${name}" (run ${this.#run.id}, step ${seq})`,
        },
        run: spec.run,
        effect: spec.effect?.(seq),
        retryPause: {
          afterMs: this.#host.retryPauseThresholdMs,
          wait: (attempt) => this.#waitSteps.stored(`r${seq}.${attempt}`),
          park: (attempt, dueAt) => {
            // The step is no longer running: it waits on a durable timer, like a wait step.
            parked = true;
            leave();
            return this.#waitSteps.park({
              runId: this.#run.id,
              id: `r${seq}.${attempt}`,
              seq,
              kind: "retry",
              name,
              status: "open",
              details: { attempt },
              dueAt,
              resolution: undefined,
              createdAt: this.#host.now(),
            });
          },
        },
      });
      if (!spec.effect) return await executing;
      this.#effectsInFlight.add(executing);
      try {
        return await executing;
      } finally {
        this.#effectsInFlight.delete(executing);
      }
    } finally {
      if (!parked) leave();
      if (step.status !== "started") this.#governor.settled(step);
    }
  }

  #newStep(seq: number, kind: StepKind, name: string, args: Json | undefined, at: number): StepRecord {
    return {
      runId: this.#run.id,
      seq,
      kind,
      name,
      status: "started",
      argsDigest: "",
      args,
      result: undefined,
      error: undefined,
      attempts: [],
      heartbeat: undefined,
      usage: undefined,
      startedAt: at,
      endedAt: null,
      epoch: this.#run.epoch,
    };
  }
}

/** `snapshot` with credentials redacted ({@link redactJson}); itself when it holds none. */
function redactedSnapshot(snapshot: { json: Json | undefined; text: string }): {
  json: Json | undefined;
  text: string;
} {
  const json = redactJson(snapshot.json);
  return json === snapshot.json ? snapshot : { json, text: JSON.stringify(json) };
}

/** The error a failed step threw, rebuilt from the journal for a replay (its class kept). */
function replayedFailure(step: StepRecord): Error {
  return deserializeError(step.error ?? { name: "Error", message: `step ${step.seq} failed` });
}
