import { randomUUID } from "node:crypto";
import type { RuntimeBackend } from "../backend/backend.ts";
import { type Budget, capBudget } from "../core/budget.ts";
import type { Clock } from "../core/clock.ts";
import type { DomainProvider } from "../core/domain-provider.ts";
import type { EnvelopeHost } from "../core/envelope/envelope-host.ts";
import { UnknownNameError } from "../core/errors.ts";
import type { RunEventBody } from "../core/events.ts";
import type { Logger } from "../core/logger.ts";
import type { McpTools } from "../core/mcp-tools.ts";
import type { ModelProvider } from "../core/model-provider.ts";
import type { Policy } from "../core/policies.ts";
import type { PriceTable } from "../core/prices.ts";
import type { Json, RunRecord, Versions } from "../core/records.ts";
import type { RetryPolicy } from "../core/retry-policy.ts";
import { breathe } from "./breather.ts";

/** What {@link createEnvelopeHost} builds a run's host from. */
export interface EnvelopeHostOptions {
  run: RunRecord;
  backend: RuntimeBackend;
  clock: Clock;
  retryPauseThresholdMs: number;
  maxSteps: number;
  maxPayloadBytes: number;
  maxHistoryBytes: number;
  maxHistoryEvents: number;
  versions(agent: string): Versions;
  /** Called after a child run was created, so the worker looks for it. */
  onChildCreated(): void;
  domains: Readonly<Record<string, DomainProvider>>;
  models: Readonly<Record<string, ModelProvider>>;
  defaultModel: string | undefined;
  domainRetry: RetryPolicy | undefined;
  modelRetry: RetryPolicy | undefined;
  modelTimeoutMs: number | undefined;
  mcp: McpTools | undefined;
  /** Adds an event to a run's live stream. */
  emit(runId: string, event: RunEventBody): void;
  logger: Logger;
  policies: readonly Policy[];
  prices: PriceTable;
  /** The default budget of an agent's runs, or undefined for an agent this runtime does not have. */
  agentBudget(agent: string): Budget | undefined;
  /** The worker's lease check before a step's call (`EnvelopeHost.holdLease`). */
  holdLease?: EnvelopeHost["holdLease"] | undefined;
  /** `ctx.secret`: the runtime's secrets provider (see `secretResolver`). */
  secret(name: string): Promise<string>;
  /** `ctx.sandbox`: the runtime's sandbox provider and log folder, if it has one. */
  sandbox: EnvelopeHost["sandbox"];
  /** The declared rate limits of steps, if any (`declaredRateLimits`). */
  rateLimits?: EnvelopeHost["rateLimits"];
}

/** Builds the {@link EnvelopeHost} of one run: storage fenced by the run's epoch, clocks, providers. */
export function createEnvelopeHost(options: EnvelopeHostOptions): EnvelopeHost {
  const { run, backend, logger } = options;
  const epoch = run.epoch;
  return {
    now: () => options.clock.now(),
    randomUUID: () => randomUUID(),
    random: () => Math.random(),
    sleep: (ms, signal) => options.clock.sleep(ms, signal),
    breathe,
    // Without a worker's check (an envelope driven outside one), there is no lease to hold.
    holdLease: options.holdLease ?? (() => undefined),
    saveSteps: (steps, sync) => backend.saveSteps(steps, { epoch, sync }),
    spawn: childSpawner(options),
    policies: options.policies,
    prices: options.prices,
    retryPauseThresholdMs: options.retryPauseThresholdMs,
    maxSteps: options.maxSteps,
    maxPayloadBytes: options.maxPayloadBytes,
    maxHistoryBytes: options.maxHistoryBytes,
    maxHistoryEvents: options.maxHistoryEvents,
    readDomain: domainReader(options.domains),
    model: modelLookup(options.models, options.defaultModel),
    domainRetry: options.domainRetry,
    modelRetry: options.modelRetry,
    modelTimeoutMs: options.modelTimeoutMs,
    mcp: options.mcp,
    secret: options.secret,
    sandbox: options.sandbox,
    rateLimits: options.rateLimits,
    emit: (event) => options.emit(run.id, event),
    log: hostLog(logger.child({ runId: run.id, ...(run.leaseOwner && { worker: run.leaseOwner }) })),
  };
}

/**
 * `log` of a run's host: lines of the run's logger (bound to its id and worker); a step's number,
 * given as `seq`, becomes the `step` field; `runId` is bound already.
 */
function hostLog(logger: Logger): EnvelopeHost["log"] {
  return (level, message, fields) => {
    const { seq, runId: _bound, ...rest } = fields;
    logger[level](seq === undefined ? rest : { step: seq, ...rest }, message);
  };
}

/** `spawn` of a run's host: creates a child run (once: a replay finds it), then pokes the worker. */
function childSpawner(options: EnvelopeHostOptions): EnvelopeHost["spawn"] {
  const { run, backend } = options;
  return async (child) => {
    if (await backend.getRun(child.id)) return;
    await backend.createRun({
      id: child.id,
      agent: child.agent,
      workflow: child.workflow,
      key: null,
      input: child.input,
      versions: options.versions(child.agent),
      // At most what the parent has left, per key, under the child agent's own limits.
      ...(() => {
        const budget = capBudget(options.agentBudget(child.agent) ?? {}, child.budget);
        const meta: Record<string, Json> = Object.keys(budget).length > 0 ? { budget: budget as Json } : {};
        if (child.trace) meta.trace = { ...child.trace };
        return { meta };
      })(),
      actor: { kind: "worker", id: run.leaseOwner ?? "unknown" },
      reason: `spawned by run ${run.id}`,
      at: Date.now(),
      parentRunId: run.id,
      parentClosePolicy: child.parentClosePolicy,
    });
    options.onChildCreated();
  };
}

/** `readDomain` of a run's host: the entity's reader of the domain's provider. */
function domainReader(domains: Readonly<Record<string, DomainProvider>>): EnvelopeHost["readDomain"] {
  return async (domain, entity, params, info) => {
    const provider = domains[domain];
    if (!provider) {
      throw new UnknownNameError(
        "UNKNOWN_DOMAIN",
        `unknown domain "${domain}" (registered: ${Object.keys(domains).join(", ") || "none"}); pass it in new Runtime({ domains: { ${domain}: ... } })`,
      );
    }
    if (typeof provider === "function") return provider(entity, params, info);
    const reader = provider[entity];
    if (typeof reader !== "function") {
      throw new UnknownNameError(
        "UNKNOWN_DOMAIN",
        `domain "${domain}" has no entity "${entity}" (known: ${Object.keys(provider).join(", ") || "none"})`,
      );
    }
    return reader(params, info);
  };
}

/** `model` of a run's host: the model a call names, or the default one. */
function modelLookup(
  models: Readonly<Record<string, ModelProvider>>,
  defaultModel: string | undefined,
): EnvelopeHost["model"] {
  return (name) => {
    const key = name ?? defaultModel;
    const model = key === undefined ? undefined : models[key];
    if (!model) {
      const known = Object.keys(models).join(", ") || "none";
      throw new UnknownNameError(
        "UNKNOWN_MODEL",
        name === undefined
          ? `no default model is registered (models: ${known}); pass new Runtime({ models: { default: new ScriptedModel() } })`
          : `unknown model "${name}" (registered: ${known})`,
      );
    }
    return model;
  };
}
