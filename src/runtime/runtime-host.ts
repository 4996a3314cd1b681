import { randomUUID } from "node:crypto";
import type { RuntimeBackend } from "../backend/backend.ts";
import type { EnvelopeHost } from "../core/envelope-host.ts";
import { UnknownNameError } from "../core/errors.ts";
import type { RunRecord } from "../core/records.ts";
import type { RetryPolicy } from "../core/retry-policy.ts";
import type { DomainProvider } from "../domain/domain-provider.ts";
import type { ModelProvider } from "../llm/model-provider.ts";
import type { Logger } from "./logger.ts";

/** Builds the {@link EnvelopeHost} of one run: storage fenced by the run's epoch, clocks, providers. */
export function createEnvelopeHost(options: {
  run: RunRecord;
  backend: RuntimeBackend;
  domains: Readonly<Record<string, DomainProvider>>;
  models: Readonly<Record<string, ModelProvider>>;
  defaultModel: string | undefined;
  domainRetry: RetryPolicy | undefined;
  modelRetry: RetryPolicy | undefined;
  logger: Logger;
}): EnvelopeHost {
  const { run, backend, domains, models, logger } = options;
  const epoch = run.epoch;
  return {
    now: () => Date.now(),
    randomUUID: () => randomUUID(),
    random: () => Math.random(),
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        if (signal.aborted) return reject(signal.reason);
        const timer = setTimeout(() => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        }, ms);
        const onAbort = () => {
          clearTimeout(timer);
          reject(signal.reason);
        };
        signal.addEventListener("abort", onAbort, { once: true });
      }),
    saveSteps: (steps, sync) => backend.saveSteps(steps, { epoch, sync }),
    readDomain: async (domain, entity, params, info) => {
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
    },
    model: (name) => {
      const key = name ?? options.defaultModel;
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
    },
    domainRetry: options.domainRetry,
    modelRetry: options.modelRetry,
    log: (level, message, fields) => logger[level](message, fields),
  };
}
