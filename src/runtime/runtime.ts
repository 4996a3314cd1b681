import { randomBytes } from "node:crypto";
import { type AgentLike, toAgentDefinition } from "../agent/decorators.ts";
import type { RunFilter, RuntimeBackend, Wake } from "../backend/backend.ts";
import { InMemoryBackend } from "../backend/memory/memory-backend.ts";
import type { AgentDefinition, WorkflowInput, WorkflowOutput } from "../core/agent-definition.ts";
import { type Clock, systemClock } from "../core/clock.ts";
import {
  IllegalTransitionError,
  InvalidDefinitionError,
  LeaseLostError,
  RunNotFoundError,
  RunNotResumableError,
  RuntimeClosedError,
  StorageError,
  UnknownNameError,
  WaitTimeoutError,
} from "../core/errors.ts";
import type { RunEvent, RunEventsOptions } from "../core/events.ts";
import { parseWorkflowInput } from "../core/input-schema.ts";
import type { Logger } from "../core/logger.ts";
import { type Policy, policyVersions, validatePolicies } from "../core/policies.ts";
import { type PriceTable, priceTable } from "../core/prices.ts";
import type { Actor, RunRecord, TransitionRecord, Versions, WaitRecord } from "../core/records.ts";
import type { RunContract } from "../core/run-contract.ts";
import { DEFAULT_MAX_AUTO_RECOVERIES, hasOutcome, isSettled, OWNED_STATES } from "../core/run-state.ts";
import { DEFAULT_MAX_PAYLOAD_BYTES, toJson } from "../core/serialize.ts";
import { RESUMABLE_FAILURES } from "../core/transitions.ts";
import { McpClients } from "../mcp/mcp-clients.ts";
import { Worker } from "../worker/worker.ts";
import { isDeadLocalOwner } from "../worker/worker-id.ts";
import {
  checkActor,
  checkId,
  checkName,
  checkNote,
  checkOptionalName,
  checkRunFilter,
  checkStartOptions,
  checkVerdict,
} from "./client-checks.ts";
import { consoleLogger } from "./console-logger.ts";
import {
  type ContractOperationsHost,
  exportRunContract,
  recordVerdict,
  reportCosts,
  type VerdictOptions,
} from "./contract-operations.ts";
import type { CostFilter, CostReport } from "./cost-report.ts";
import { type ReconcileOptions, reconcileEffect } from "./effect-operations.ts";
import { RunEventHub } from "./run-events.ts";
import { RunHandle } from "./run-handle.ts";
import { historyLimits, type RunLimits } from "./run-limits.ts";
import { createEnvelopeHost } from "./runtime-host.ts";
import { type RunHistory, type RuntimeOptions, type StartOptions, startMeta } from "./runtime-options.ts";
import { secretResolver } from "./secrets.ts";
import { RUNTIME_VERSION } from "./version.ts";
import {
  answerQuestion,
  cancelRun,
  type DecisionOptions,
  decideApproval,
  type SignalOptions,
  sendSignal,
  type WaitOperationsHost,
} from "./wait-operations.ts";

type Listener = (transition: TransitionRecord, run: RunRecord) => void;

/**
 * Wires agents, a backend and an in-process worker, and offers the client operations.
 *
 * @example
 * const runtime = new Runtime({ agents: [reportBuilder], backend: new SqliteBackend({ path: ".cairn/cairn.db" }) });
 * await runtime.start();
 * const run = await runtime.run(reportBuilder, "build", { quarter: "2026-Q3" }, { key: "report-2026-Q3" });
 * console.log(await run.result());
 */
export class Runtime {
  readonly backend: RuntimeBackend;
  readonly #agents = new Map<string, AgentDefinition>();
  readonly #options: RuntimeOptions;
  readonly #logger: Logger;
  readonly #maxPayloadBytes: number;
  readonly #limits: RunLimits;
  readonly #policies: readonly Policy[];
  /** `name@version,…` of the policies, recorded on every transition. */
  readonly #policyVersions: string | null;
  readonly #prices: PriceTable;
  readonly #worker: Worker | undefined;
  readonly #listeners = new Set<Listener>();
  /** The live event stream of the runs this process executes. */
  readonly #events: RunEventHub;
  /** The MCP servers of `options.mcp`, connected on first use. */
  readonly #mcp: McpClients | undefined;
  readonly #waiters = new Map<string, Set<(terminal?: RunRecord) => void>>();
  #started: Promise<void> | undefined;
  #closed = false;
  #subscription: Promise<(() => Promise<void>) | undefined> | undefined;
  #backendClosed = false;
  #signalHandler: ((signal: NodeJS.Signals) => void) | undefined;
  /** The time workflows see. */
  readonly clock: Clock;

  constructor(options: RuntimeOptions) {
    if (!options || !Array.isArray(options.agents)) {
      throw new InvalidDefinitionError("new Runtime({ agents: [...] }) needs the list of agents it runs");
    }
    this.#options = options;
    this.#logger = options.logger ?? consoleLogger;
    this.#maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    if (!(Number.isSafeInteger(this.#maxPayloadBytes) && this.#maxPayloadBytes >= 1)) {
      throw new InvalidDefinitionError(
        `maxPayloadBytes must be a whole number of bytes, at least 1 (got ${String(options.maxPayloadBytes)})`,
      );
    }
    this.#limits = {
      maxSteps: options.maxSteps ?? 10_000,
      maxPayloadBytes: this.#maxPayloadBytes,
      ...historyLimits(options),
    };
    this.#policies = Object.freeze([...(options.policies ?? [])]);
    validatePolicies(this.#policies);
    this.#policyVersions = policyVersions(this.#policies);
    this.#prices = priceTable(options.prices);
    this.backend = options.backend ?? new InMemoryBackend();
    this.clock = options.clock ?? systemClock;
    this.#events = new RunEventHub(() => this.clock.now());
    const mcp = options.mcp ?? {};
    this.#mcp =
      Object.keys(mcp).length > 0
        ? new McpClients(mcp, { log: (level, message, fields) => this.#logger[level](message, fields) })
        : undefined;
    for (const item of options.agents) {
      const agent = toAgentDefinition(item);
      if (this.#agents.has(agent.name)) {
        throw new InvalidDefinitionError(
          `two agents are named "${agent.name}"; agent names must be unique in a runtime`,
        );
      }
      this.#agents.set(agent.name, agent);
    }
    const secret = secretResolver(options.secrets);
    if (options.worker !== false) {
      this.#worker = new Worker(
        {
          backend: this.backend,
          logger: this.#logger,
          agent: (name) => this.#agents.get(name),
          agentNames: [...this.#agents.keys()],
          host: (run, _envelope, holdLease) => {
            const models = options.models ?? {};
            const names = Object.keys(models);
            return createEnvelopeHost({
              holdLease,
              run,
              backend: this.backend,
              clock: this.clock,
              retryPauseThresholdMs: options.retryPauseThresholdMs ?? 5000,
              maxSteps: options.maxSteps ?? 10_000,
              maxPayloadBytes: this.#maxPayloadBytes,
              maxHistoryBytes: this.#limits.maxHistoryBytes,
              maxHistoryEvents: this.#limits.maxHistoryEvents,
              versions: (agent) => this.#versions(agent),
              onChildCreated: () => this.#worker?.poke(),
              domains: options.domains ?? {},
              models,
              defaultModel: "default" in models ? "default" : names.length === 1 ? names[0] : undefined,
              domainRetry: options.domainRetry,
              modelRetry: options.modelRetry,
              modelTimeoutMs: options.modelTimeoutMs,
              mcp: this.#mcp,
              emit: (runId, event) => this.#events.emit(runId, event),
              logger: this.#logger,
              policies: this.#policies,
              prices: this.#prices,
              agentBudget: (agent) => this.#agents.get(agent)?.budget,
              secret,
            });
          },
          versions: (agent) => this.#versions(agent),
          onTransition: (t, run) => this.#emit(t, run),
          clock: this.clock,
          newRunId,
        },
        options.worker ?? {},
      );
    }
  }

  /** The agents this runtime runs, in the order they were given. */
  get agents(): readonly AgentDefinition[] {
    return [...this.#agents.values()];
  }

  /** The per-run limits this runtime applies (its options, defaults filled in). */
  get limits(): RunLimits {
    return { ...this.#limits };
  }

  /** The worker id of this runtime's worker (shown in transitions it makes). */
  get workerId(): string | undefined {
    return this.#worker?.id;
  }

  /**
   * Opens the backend and starts the worker. With `handleSignals`, SIGTERM and SIGINT shut the
   * runtime down gracefully (runs still in flight after the grace period become INTERRUPTED).
   */
  start(options: { handleSignals?: boolean } = {}): Promise<void> {
    this.#started ??= (async () => {
      await this.backend.init();
      // A runtime with a worker listens from the start; a client-only one when it first waits.
      if (this.#worker) await this.#subscribe();
      this.#worker?.start();
      if (options.handleSignals) {
        const handler = (signal: NodeJS.Signals) => {
          void this.shutdown({ reason: `${signal} received` }).finally(() =>
            process.exit(128 + (signal === "SIGINT" ? 2 : 15)),
          );
        };
        this.#signalHandler = handler;
        process.once("SIGTERM", handler);
        process.once("SIGINT", handler);
      }
    })();
    return this.#started;
  }

  /** Starts a run (or returns the existing one for its key). */
  async run<A extends AgentDefinition, K extends keyof A["workflows"] & string>(
    agent: A,
    workflow: K,
    input: WorkflowInput<A, K>,
    options?: StartOptions,
  ): Promise<RunHandle<Awaited<WorkflowOutput<A, K>>>>;
  // A definition object must match the typed overload above; letting it through here would
  // accept any workflow name and input for it.
  async run(
    agent: string | Exclude<AgentLike, AgentDefinition>,
    workflow: string,
    input: unknown,
    options?: StartOptions,
  ): Promise<RunHandle>;
  async run(
    agentRef: string | AgentLike,
    workflow: string,
    input: unknown,
    options: StartOptions = {},
  ): Promise<RunHandle> {
    await this.#ready();
    const agent = this.#agent(
      typeof agentRef === "string" ? checkName(agentRef, "agent") : toAgentDefinition(agentRef).name,
    );
    checkName(workflow, "workflow");
    checkStartOptions(options);
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
    const created = await this.backend.createRun({
      id: newRunId(),
      agent: agent.name,
      workflow,
      key: options.key ?? null,
      input:
        toJson(input, `the input of workflow "${workflow}" of agent "${agent.name}"`, this.#maxPayloadBytes) ?? null,
      versions: this.#versions(agent.name),
      meta: startMeta(agent, options, this.#maxPayloadBytes),
      actor: options.by ?? { kind: "user", id: "local" },
      reason: options.key ? `started with key "${options.key}"` : "started",
      at: Date.now(),
    });
    if (created.created) {
      this.#emit(created.transition, created.run);
      this.#worker?.poke();
    }
    return new RunHandle(this, created.run.id, created.created);
  }

  /** A handle on an existing run. */
  handle(runId: string): RunHandle {
    return new RunHandle(this, runId, false);
  }

  /** The run as stored; throws `RunNotFoundError` when there is none. */
  async getRun(runId: string): Promise<RunRecord> {
    checkId(runId);
    await this.#readable();
    const run = await this.backend.getRun(runId);
    if (!run) throw new RunNotFoundError(`no run with id "${runId}"; list runs with \`cairn runs\``);
    return run;
  }

  async listRuns(filter: RunFilter = {}): Promise<RunRecord[]> {
    checkRunFilter(filter);
    await this.#readable();
    return this.backend.listRuns(filter);
  }

  /** The run with its transitions and steps. */
  async history(runId: string): Promise<RunHistory> {
    const run = await this.getRun(runId);
    const [transitions, steps, waits] = await Promise.all([
      this.backend.listTransitions(runId),
      this.backend.loadSteps(runId),
      this.backend.loadWaits(runId),
    ]);
    return { run, transitions, steps, waits };
  }

  /**
   * Waits until the run reaches a terminal state (COMPLETED, FAILED, BLOCKED, INTERRUPTED,
   * CANCELLED, COMPENSATED) or NEEDS_RECONCILIATION (it waits for an operator) and returns it.
   * Runs driven by other processes are polled, and woken on when the backend sends wake-ups.
   *
   * A crash or a deploy is not an outcome: an INTERRUPTED run that automatic recovery takes up
   * again (recovered fewer than `maxAutoRecoveries` times: the option here, else this runtime's
   * worker's, default 3) is waited on like a RUNNING one, until it ends for good. INTERRUPTED is
   * returned once the bound is used up (a run that crashes its worker every time), with
   * `maxAutoRecoveries: 0`, and when this runtime shuts down while waiting (its own worker left
   * the run INTERRUPTED, and nothing here will take it up).
   */
  async waitFor(
    runId: string,
    options: { timeoutMs?: number; pollIntervalMs?: number; maxAutoRecoveries?: number } = {},
  ): Promise<RunRecord> {
    const deadline = options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
    const poll = options.pollIntervalMs ?? 250;
    // Waiting across processes: a backend's wake-ups end the wait as soon as the run ends.
    await this.#readable();
    await this.#subscribe().catch((error: unknown) =>
      this.#logger.warn("wake-ups unavailable; waiting by polling", { error: String(error) }),
    );
    for (;;) {
      // Storage that is down for a while (a database restart) is waited out like a slow run.
      const run = await this.getRun(runId).catch((error: unknown) => {
        if (!(error instanceof StorageError) || Date.now() >= deadline) throw error;
        this.#logger.warn(`waiting for run ${runId}: storage unavailable, trying again`, { error: error.message });
        return undefined;
      });
      if (run && this.#ended(run, options.maxAutoRecoveries)) return run;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new WaitTimeoutError(`run ${runId} is still ${run?.state ?? "unknown"} after ${options.timeoutMs} ms`);
      }
      // Woken with the run when this runtime records its terminal transition: returned as is, so a
      // run interrupted by this runtime's own shutdown is reported even though it is now closed. A
      // run that recovery takes up again (by this waiter's bound) is waited on.
      const ended = await new Promise<RunRecord | undefined>((resolve) => {
        const waiters = this.#waiters.get(runId) ?? new Set();
        this.#waiters.set(runId, waiters);
        const done = (terminal?: RunRecord) => {
          clearTimeout(timer);
          waiters.delete(done);
          if (waiters.size === 0 && this.#waiters.get(runId) === waiters) this.#waiters.delete(runId);
          resolve(terminal);
        };
        const timer = setTimeout(() => done(), Math.min(poll, left));
        waiters.add(done);
      });
      if (ended && this.#ended(ended, options.maxAutoRecoveries)) return ended;
    }
  }

  /**
   * Resumes a run that stopped without finishing: an INTERRUPTED run, a FAILED run whose error is
   * a replay divergence (after the code was fixed), or a run whose worker is gone (its lease
   * lapsed, or its process on this host no longer exists), which is first recorded INTERRUPTED.
   * The run goes RESUMING and a worker replays it from its checkpoints.
   */
  async resume(runId: string, options: { by?: Actor; reason?: string } = {}): Promise<RunHandle> {
    checkActor(options.by);
    checkNote(options.reason, "reason");
    await this.#ready();
    let run = await this.getRun(runId);
    const by = options.by ?? { kind: "user", id: "local" };
    const versions = this.#versions(run.agent);
    // A recovery sweep (this runtime's worker starts with one) may have resumed the run already:
    // RESUMING and not claimed yet, or claimed by this very worker. That is not a lost worker.
    const underWay = run.state === "RESUMING" || run.state === "RUNNING";
    if (underWay && (run.leaseOwner === null || run.leaseOwner === this.workerId)) {
      return new RunHandle(this, runId, false);
    }
    // Reconciled or cancelled while no worker held it: it waits for the next claim, not a takeover.
    if ((run.state === "RECONCILING" || run.state === "CANCELLING") && run.leaseOwner === null) {
      this.#worker?.poke();
      return new RunHandle(this, runId, false);
    }
    if (run.state === "PENDING") return this.#resumePending(run);
    if (OWNED_STATES.has(run.state)) {
      const now = Date.now();
      const lapsed = run.leaseExpiresAt === null || run.leaseExpiresAt <= now;
      const dead = run.leaseOwner !== null && isDeadLocalOwner(run.leaseOwner);
      if (!lapsed && !dead) {
        throw new RunNotResumableError(
          `run ${runId} is ${run.state} and held by worker ${run.leaseOwner} until ${new Date(run.leaseExpiresAt ?? now).toISOString()}; if that worker is gone, resume again after its lease lapses`,
        );
      }
      const result = await this.backend
        .transition({
          runId,
          from: run.state,
          to: "INTERRUPTED",
          actor: by,
          reason: `worker ${run.leaseOwner ?? "unknown"} was lost while the run was ${run.state} (${dead ? "its process is gone" : "its lease lapsed"})`,
          versions,
          at: now,
          fence: { takeover: { epoch: run.epoch, leaseExpiresAt: run.leaseExpiresAt } },
        })
        .catch(async (error: unknown) => {
          // A recovery sweep recorded the loss first (and may have resumed the run already): go on
          // from what it stored.
          const current = await this.getRun(runId);
          const moved = current.epoch > run.epoch;
          if (
            moved &&
            (current.state === "INTERRUPTED" || current.state === "RESUMING" || current.state === "RUNNING")
          ) {
            return { run: current, transition: undefined };
          }
          throw error;
        });
      if (result.transition) this.#emit(result.transition, result.run);
      run = result.run;
      // Taken over and resumed by another worker's sweep in the meantime: the resume has happened.
      if (run.state === "RESUMING" || run.state === "RUNNING") return new RunHandle(this, runId, false);
    }
    const orphan = run.state === "PAUSED" && run.pausedReason === "suspended_orphan";
    if (
      run.state !== "INTERRUPTED" &&
      !orphan &&
      !(run.state === "FAILED" && RESUMABLE_FAILURES.has(run.error?.code ?? ""))
    ) {
      throw new RunNotResumableError(
        run.state === "FAILED"
          ? `run ${runId} FAILED with ${run.error?.code ?? run.error?.name ?? "an error"}; only a replay divergence or a version mismatch can be resumed, fork the run instead`
          : run.state === "PAUSED"
            ? `run ${runId} is PAUSED (${run.pausedReason}); it resumes by itself when what it waits for arrives (signal, answer, approve or deny it)`
            : `run ${runId} is ${run.state}; only INTERRUPTED runs, suspended orphans and FAILED runs with REPLAY_DIVERGENCE or VERSION_MISMATCH can be resumed`,
      );
    }
    const from = run.state;
    const result = await this.backend
      .transition({
        runId,
        from,
        to: "RESUMING",
        actor: by,
        reason: options.reason ?? `resumed by ${by.kind} ${by.id}`,
        versions,
        at: Date.now(),
        fence: { unowned: true, now: Date.now() },
        patch: from === "FAILED" ? { error: null } : orphan ? { clearStopRequest: true } : {},
      })
      .catch(async (error: unknown) => {
        // A worker's automatic recovery (this runtime's included, which starts with it) may have
        // resumed the INTERRUPTED run first: the only way out of INTERRUPTED is RESUMING, so the
        // resume that was asked for has happened.
        // Its claim may already hold a live lease, so the refusal can be LeaseLostError too.
        if ((error instanceof IllegalTransitionError || error instanceof LeaseLostError) && from === "INTERRUPTED") {
          if ((await this.getRun(runId)).state !== "INTERRUPTED") return undefined;
        }
        throw error;
      });
    if (!result) return new RunHandle(this, runId, false);
    this.#emit(result.transition, result.run);
    this.#worker?.poke();
    return new RunHandle(this, runId, false);
  }

  /**
   * `resume` of a PENDING run: it has not started, so nothing is recorded. Unclaimed, or claimed
   * by a worker that is gone (its lease lapsed, or its process on this host no longer exists), it
   * is this runtime's worker's to claim (a dead owner's claim is taken over at once); claimed by a
   * live worker, it is refused.
   */
  async #resumePending(run: RunRecord): Promise<RunHandle> {
    const now = Date.now();
    const owner = run.leaseOwner;
    const live = owner !== null && run.leaseExpiresAt !== null && run.leaseExpiresAt > now;
    if (live && !isDeadLocalOwner(owner) && owner !== this.workerId) {
      throw new RunNotResumableError(
        `run ${run.id} is PENDING and claimed by worker ${owner} until ${new Date(run.leaseExpiresAt ?? now).toISOString()}, which is starting it; if that worker is gone, resume again after its lease lapses`,
      );
    }
    if (live && owner !== null && owner !== this.workerId) await this.#worker?.takeOverClaim(run);
    this.#worker?.poke();
    return new RunHandle(this, run.id, false);
  }

  /**
   * Sends signal `name` to a run. It is kept in the run's inbox and resolves the run's
   * `ctx.waitForSignal(name)` — now, or when the run gets there. A repeated `messageId` is
   * acknowledged as a duplicate (`duplicate: true`) and not delivered twice.
   */
  async signal(
    runId: string,
    name: string,
    payload?: unknown,
    options: SignalOptions = {},
  ): Promise<{ duplicate: boolean; deliveredTo: string | null; messageId: string }> {
    checkId(runId);
    checkName(name, "signal name");
    checkOptionalName(options.messageId, "messageId");
    checkActor(options.by);
    await this.#ready();
    const result = await sendSignal(this.#ops(), runId, name, payload, options);
    if (result.transition) this.#worker?.poke();
    return { duplicate: result.duplicate, deliveredTo: result.deliveredTo, messageId: result.signal.messageId };
  }

  /**
   * Answers the question `waitId` (asked with `ctx.askUser`). An answer that does not match the
   * question's schema is refused with `InvalidInputError` naming the problem; the run keeps waiting.
   */
  async answer(
    runId: string,
    waitId: string,
    value: unknown,
    options: { by?: Actor | string } = {},
  ): Promise<WaitRecord> {
    checkId(runId);
    checkId(waitId, "wait id");
    checkActor(options.by);
    await this.#ready();
    const result = await answerQuestion(this.#ops(), runId, waitId, value, options);
    if (result.transition) this.#worker?.poke();
    return result.wait;
  }

  /**
   * Approves the approval `approvalId`. Refused (`ApprovalRefusedError`) without the decider's
   * identity, when the decider is not one of its approvers, when `digest` is not the digest of its
   * payload, or once it expired; a second decision is refused with `WaitClosedError`.
   */
  async approve(runId: string, approvalId: string, options: DecisionOptions): Promise<WaitRecord> {
    return this.#decide(runId, approvalId, "approved", options);
  }

  /** Denies the approval `approvalId`; the same rules as {@link Runtime.approve}. */
  async deny(runId: string, approvalId: string, options: DecisionOptions): Promise<WaitRecord> {
    return this.#decide(runId, approvalId, "denied", options);
  }

  async #decide(
    runId: string,
    approvalId: string,
    decision: "approved" | "denied",
    options: DecisionOptions,
  ): Promise<WaitRecord> {
    checkId(runId);
    checkId(approvalId, "approval id");
    checkActor(options?.by);
    checkNote(options?.digest, "digest");
    checkNote(options?.note, "note");
    await this.#ready();
    const result = await decideApproval(this.#ops(), runId, approvalId, decision, options);
    if (result.transition) this.#worker?.poke();
    return result.wait;
  }

  /**
   * Cancels a run that has not ended. A PENDING run is CANCELLED at once; a PAUSED one is
   * cancelled by a worker; a running one has its tools' `AbortSignal` fire and ends CANCELLED
   * after at most the worker's `cancelGraceMs`, with what was in flight recorded. Returns the run
   * as the request left it (`waitFor` it to see it end).
   */
  async cancel(runId: string, options: { by?: Actor | string; reason?: string } = {}): Promise<RunRecord> {
    checkId(runId);
    checkActor(options.by);
    checkNote(options.reason, "reason");
    await this.#ready();
    const run = await cancelRun(this.#ops(), runId, options);
    this.#worker?.noticeStop(runId);
    this.#worker?.poke();
    return run;
  }

  /**
   * Fires the durable timers that are due now (the worker does this by itself; a test that moved
   * a virtual clock may call it to not wait for the worker's next look).
   */
  async fireDueTimers(): Promise<void> {
    await this.#ready();
    await this.#worker?.fireDue();
  }

  /** The waits of a run (questions, approvals, timers, signals, children, retry backoffs). */
  async waits(runId: string): Promise<WaitRecord[]> {
    await this.getRun(runId);
    return this.backend.loadWaits(runId);
  }

  /**
   * Settles an effect whose outcome is unknown (the run is NEEDS_RECONCILIATION): `applied`
   * records `result` and `receipt` and the tool is not run again; `not_applied` lets it run again
   * under its retry policy. The decision is recorded on the effect with who made it, and the run
   * moves RECONCILING -> RUNNING and on.
   */
  async reconcile(runId: string, effectId: string, options: ReconcileOptions): Promise<RunRecord> {
    checkId(runId);
    checkId(effectId, "effect id");
    checkActor(options?.by);
    checkNote(options?.note, "note");
    await this.#ready();
    const run = await reconcileEffect(this.#ops(), runId, effectId, options);
    this.#worker?.poke();
    return run;
  }

  #ops(): WaitOperationsHost {
    return {
      backend: this.backend,
      // A client without the agent's code records the versions the run started with.
      versions: (run) => (this.#agents.has(run.agent) ? this.#versions(run.agent) : run.versions),
      now: () => this.clock.now(),
      maxPayloadBytes: this.#maxPayloadBytes,
      maxUnreadSignals: this.#limits.maxUnreadSignals,
      getRun: (id) => this.getRun(id),
      emit: (transitions, run) => {
        for (const t of transitions) if (t.runId === run.id) this.#emit(t, run);
      },
    };
  }

  /**
   * The run's live events from offset `from` on (DESIGN §8): the transitions this runtime records
   * and the text its model calls stream, with a `model.retry` event when an attempt failed and
   * its partial text should be cleared. Ends when the run settles (a terminal state or
   * NEEDS_RECONCILIATION, also when another process settled it), when `signal` fires, or when
   * the runtime closes. Events are kept in memory (the last 10,000 per run), not journaled: what
   * happened for the record is in `history(runId)`.
   *
   * @example
   * for await (const event of runtime.events(handle.id)) {
   *   if (event.type === "model.text") process.stdout.write(event.text);
   * }
   */
  events(runId: string, options: RunEventsOptions = {}): AsyncIterable<RunEvent> {
    checkId(runId);
    return this.#events.read(runId, { ...options, checkMs: 1000 }, async () => {
      const run = await this.backend.getRun(runId);
      return run !== undefined && this.#ended(run);
    });
  }

  /** Calls `listener` for every transition made by this runtime. Returns an unsubscribe function. */
  onTransition(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Stops the worker: no new claims; runs in flight get `graceMs` to finish, then are recorded
   * INTERRUPTED and released so another worker (or `resume`) continues them.
   */
  async shutdown(options: { graceMs?: number; reason?: string } = {}): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#signalHandler) {
      process.off("SIGTERM", this.#signalHandler);
      process.off("SIGINT", this.#signalHandler);
    }
    if (this.#started) {
      await this.#started.catch(() => {});
      await this.#worker?.shutdown(
        options.graceMs ?? this.#options.shutdownGraceMs ?? 10_000,
        options.reason ?? "shutdown",
      );
      const unsubscribe = await this.#subscription?.catch(() => undefined);
      await unsubscribe?.().catch(() => {});
      this.#backendClosed = true;
      await this.backend.close();
    }
    this.#events.closeAll();
    await this.#mcp
      ?.close()
      .catch((error: unknown) => this.#logger.warn("closing the MCP servers failed", { error: String(error) }));
  }

  /** Same as `shutdown()`. */
  close(): Promise<void> {
    return this.shutdown();
  }

  /** Subscribes to the backend's wake-ups once (if it has them). */
  #subscribe(): Promise<(() => Promise<void>) | undefined> {
    // Once shutdown has begun, no new connection: it would outlive the runtime.
    if (this.#closed && !this.#subscription) return Promise.resolve(undefined);
    this.#subscription ??= this.backend.subscribe
      ? this.backend.subscribe((wake) => this.#onWake(wake))
      : Promise.resolve(undefined);
    return this.#subscription;
  }

  /** A wake-up from the backend: work for the worker, or a run that ended in another process. */
  #onWake(wake: Wake): void {
    if (wake.kind === "stop") {
      this.#worker?.noticeStop(wake.runId);
      return;
    }
    if (wake.kind !== "ended") this.#worker?.poke();
    const waiting = wake.kind === "reconnected" ? [...this.#waiters.values()] : [this.#waiters.get(wake.runId)];
    // Woken without a run: each waiter reads the run again.
    for (const waiters of waiting) for (const done of [...(waiters ?? [])]) done();
  }

  #emit(transition: TransitionRecord, run: RunRecord): void {
    const ended = this.#ended(run);
    this.#events.transition(transition, ended);
    for (const listener of this.#listeners) {
      try {
        listener(transition, run);
      } catch (error) {
        this.#logger.warn("transition listener threw", { error: String(error) });
      }
    }
    // Each waiter judges by its own bound on recoveries whether this is the run's end.
    const waiters = this.#waiters.get(run.id);
    if (waiters && isSettled(run.state)) for (const w of [...waiters]) w(run);
  }

  /**
   * Whether the run has an outcome to report: it settled, and it is not an INTERRUPTED run that
   * automatic recovery takes up again — unless this runtime is shutting down, and so will not.
   */
  #ended(run: RunRecord, maxAutoRecoveries?: number): boolean {
    if (this.#closed) return isSettled(run.state);
    const bound =
      maxAutoRecoveries ??
      (this.#options.worker === false ? undefined : this.#options.worker?.maxAutoRecoveries) ??
      DEFAULT_MAX_AUTO_RECOVERIES;
    return hasOutcome(run, bound);
  }

  #agent(name: string): AgentDefinition {
    const agent = this.#agents.get(name);
    if (!agent) {
      throw new UnknownNameError(
        "UNKNOWN_AGENT",
        `unknown agent "${name}" (registered: ${[...this.#agents.keys()].join(", ") || "none"})`,
      );
    }
    return agent;
  }

  #versions(agentName: string): Versions {
    return {
      workflow: this.#agents.get(agentName)?.version ?? "unknown",
      policy: this.#policyVersions,
      runtime: RUNTIME_VERSION,
    };
  }

  /** Before a run is started or resumed: refused once shutdown has begun. */
  async #ready(): Promise<void> {
    if (this.#closed) throw new RuntimeClosedError("the runtime is shutting down; create a new Runtime to start runs");
    await this.start();
  }

  /** Before a read: allowed while shutting down, until the backend is closed. */
  async #readable(): Promise<void> {
    if (this.#backendClosed) throw new RuntimeClosedError("the runtime is shut down; create a new Runtime");
    if (!this.#closed) await this.start();
  }

  // ── Run contract, acceptance and cost (contract-operations.ts) ──────────────────────────────

  /**
   * The run's contract: one self-contained record of its job, transitions, checkpoint, retry
   * rules, effects, waits and approvals, recovery, completion, acceptance, usage and journal
   * (see `RunContract`). Throws `RunNotFoundError` for an unknown id.
   */
  async exportRun(runId: string): Promise<RunContract> {
    return exportRunContract(this.#contractOps(), runId);
  }

  /**
   * Accepts the outcome of a COMPLETED run: a verdict kept apart from its state (the state does
   * not change). Refused with `RunNotCompletedError` for a run in another state and with
   * `AlreadyDecidedError` for a run that has a verdict already.
   */
  async accept(runId: string, options: VerdictOptions = {}): Promise<RunRecord> {
    checkVerdict(options);
    await this.#ready();
    return recordVerdict(this.#contractOps(), runId, "accepted", options);
  }

  /** Rejects the outcome of a COMPLETED run; the same rules as {@link Runtime.accept}. */
  async reject(runId: string, options: VerdictOptions = {}): Promise<RunRecord> {
    checkVerdict(options);
    await this.#ready();
    return recordVerdict(this.#contractOps(), runId, "rejected", options);
  }

  /**
   * What all runs cost (or those of one agent / workflow), every ending included, with the
   * accepted, rejected and unreviewed completed runs and the cost per accepted job.
   */
  async costReport(filter: CostFilter = {}): Promise<CostReport> {
    checkOptionalName(filter.agent, "filter.agent");
    checkOptionalName(filter.workflow, "filter.workflow");
    await this.#readable();
    return reportCosts(this.#contractOps(), filter);
  }

  #contractOps(): ContractOperationsHost {
    return {
      backend: this.backend,
      now: () => this.clock.now(),
      getRun: (id) => this.getRun(id),
      agent: (name) => this.#agents.get(name),
    };
  }
}

/** Run ids sort by creation time: `run_` + base-36 milliseconds + random. */
export function newRunId(): string {
  return `run_${Date.now().toString(36).padStart(9, "0")}${randomBytes(5).toString("hex")}`;
}

export type { RunHistory, RuntimeOptions, StartOptions } from "./runtime-options.ts";
