import type { RateLimitStore, RuntimeBackend } from "../backend/backend.ts";
import { type Clock, systemClock } from "../core/clock.ts";
import { InvalidDefinitionError, ModelUnavailableError } from "../core/errors.ts";
import { adaptLegacyLogger, type LegacyLogger, type Logger, silentLogger } from "../core/logger.ts";
import { checkRateLimitSpec, type RateLimitSpec } from "../core/rate-limits.ts";

/** One limit: at most `limit` calls per `periodMs`, spaced evenly (`periodMs / limit` apart). */
export interface RateLimit {
  limit: number;
  periodMs: number;
}

/** Options of {@link SharedRateLimiter}. */
export interface SharedRateLimiterOptions {
  /** The clock slots are read and waited on (a `TestRuntime`'s virtual clock in tests). @default the system clock */
  clock?: Clock;
  /** Where a wait for a slot is logged (at info, with the limit and how long). @default silent */
  logger?: Logger | LegacyLogger;
}

/**
 * Rate limits shared by every worker on a backend (DESIGN §4 *Rate limits*): a call over the limit
 * waits for its slot instead of failing. Each call takes the next slot of its limit from the
 * backend in one atomic write, so calls from every process on the backend are spaced
 * `periodMs / limit` apart: at most `limit` start in any window of `periodMs`. A provider's 429
 * with a Retry-After holds the limit for every worker (`hold`, or `run` does it when the call
 * throws a `ModelUnavailableError` carrying `retryAfterMs`).
 *
 * @example
 * const limiter = new SharedRateLimiter(runtime.backend, { "search-api": { limit: 20, periodMs: 1000 } });
 * const search = defineTool({
 *   run: (ctx, { q }: { q: string }) => limiter.run("search-api", () => searchApi(q), ctx.signal),
 * });
 */
export class SharedRateLimiter {
  readonly #backend: RuntimeBackend;
  readonly #limits: Readonly<Record<string, RateLimit>>;
  readonly #clock: Clock;
  readonly #logger: Logger;

  /**
   * @param limits by name: `{ limit, periodMs }`, or `{ limit, per }` as the runtime's
   *   `rateLimits` take them (`per`: `"1s"`, `"1m"`, … or ms), so one object can serve both.
   */
  constructor(
    backend: RuntimeBackend,
    limits: Record<string, RateLimit | RateLimitSpec>,
    options: SharedRateLimiterOptions = {},
  ) {
    const checked: Record<string, RateLimit> = {};
    for (const [name, spec] of Object.entries(limits)) {
      if ("per" in spec) {
        checked[name] = checkRateLimitSpec(spec, `rate limit "${name}"`);
        continue;
      }
      const { limit, periodMs } = spec;
      if (!(Number.isSafeInteger(limit) && limit > 0 && Number.isFinite(periodMs) && periodMs > 0)) {
        throw new InvalidDefinitionError(
          `rate limit "${name}" must be a whole number of calls above 0 per a period above 0 ms (got ${limit} per ${periodMs} ms)`,
        );
      }
      checked[name] = { limit, periodMs };
    }
    this.#backend = backend;
    this.#limits = checked;
    this.#clock = options.clock ?? systemClock;
    this.#logger = adaptLegacyLogger(options.logger ?? silentLogger);
  }

  #store(): RateLimitStore {
    const store = this.#backend.rateLimits;
    if (!store) {
      throw new InvalidDefinitionError(
        `the ${this.#backend.name} backend cannot share rate limits (it has no \`rateLimits\` role); use the memory, SQLite or PostgreSQL backend`,
      );
    }
    return store;
  }

  #limit(name: string): RateLimit {
    const limit = this.#limits[name];
    if (!limit) {
      throw new InvalidDefinitionError(
        `no rate limit named "${name}" (declared: ${Object.keys(this.#limits).join(", ") || "none"})`,
      );
    }
    return limit;
  }

  /**
   * Takes the next slot of limit `name` and waits until it comes (at once when the limit is not
   * reached). Returns how long it waited, in ms. Rejects with the signal's reason when it fires.
   */
  async take(name: string, signal: AbortSignal = new AbortController().signal): Promise<number> {
    const { limit, periodMs } = this.#limit(name);
    const now = this.#clock.now();
    const slot = await this.#store().takeRateSlot(name, periodMs / limit, now);
    const wait = Math.max(0, Math.ceil(slot - this.#clock.now()));
    if (wait > 0) {
      this.#logger.info(
        { rateLimit: name, waitMs: wait },
        `rate limit "${name}" (${limit} per ${periodMs} ms) reached: waiting ${wait} ms for a slot`,
      );
      await this.#clock.sleep(wait, signal);
    }
    return wait;
  }

  /** Holds limit `name` for `ms` from now for every worker (a provider said "retry after"). */
  async hold(name: string, ms: number): Promise<void> {
    this.#limit(name);
    const now = this.#clock.now();
    await this.#store().holdRateLimit(name, now + ms, now);
    this.#logger.warn(
      { rateLimit: name, holdMs: ms },
      `rate limit "${name}" held for ${ms} ms: the provider asked to retry after that`,
    );
  }

  /**
   * Runs `call` in a slot of limit `name`; when it throws a `ModelUnavailableError` with
   * `retryAfterMs` (a 429 with Retry-After), holds the limit for that long for every worker, then
   * rethrows (the step's retry policy decides what happens to this attempt).
   */
  async run<T>(name: string, call: () => Promise<T> | T, signal?: AbortSignal): Promise<T> {
    await this.take(name, signal);
    try {
      return await call();
    } catch (error) {
      const after = error instanceof ModelUnavailableError ? error.retryAfterMs : undefined;
      if (after !== undefined && after > 0) await this.hold(name, after);
      throw error;
    }
  }
}
