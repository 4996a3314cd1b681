import { CairnError, NonRetryableError } from "./errors.ts";

/** How a failed step attempt is retried. */
export interface RetryPolicy {
  /** Delay before the second attempt. @default 1000 */
  initialIntervalMs?: number;
  /** Multiplier applied to the delay after each attempt. @default 2 */
  backoffCoefficient?: number;
  /** Upper bound of one delay. @default 100000 */
  maximumIntervalMs?: number;
  /** Attempts in all, the first included; 1 means no retry. @default 5 */
  maximumAttempts?: number;
  /** Fraction of each delay that is randomised (0 = none, 0.2 = ±20 %). @default 0.2 */
  jitter?: number;
  /**
   * Errors that are never retried: a class (matched with `instanceof`) or an error `name`.
   * Cairn's own errors carry their retryability and `NonRetryableError` is never retried.
   * @default []
   */
  nonRetryableErrors?: ReadonlyArray<string | (abstract new (...args: never[]) => Error)>;
}

/** The policy with every default filled in. */
export type ResolvedRetryPolicy = Required<RetryPolicy>;

/** Defaults of DESIGN §4: 1 s, ×2, at most 100 s, 5 attempts, ±20 % jitter. */
export const DEFAULT_RETRY_POLICY: ResolvedRetryPolicy = Object.freeze({
  initialIntervalMs: 1000,
  backoffCoefficient: 2,
  maximumIntervalMs: 100_000,
  maximumAttempts: 5,
  jitter: 0.2,
  nonRetryableErrors: [],
});

const resolved = new WeakMap<RetryPolicy, ResolvedRetryPolicy>();

/** Fills in defaults and checks the numbers make sense (cached per policy object). */
export function resolveRetryPolicy(policy: RetryPolicy | undefined): ResolvedRetryPolicy {
  if (policy === undefined) return DEFAULT_RETRY_POLICY;
  let p = resolved.get(policy);
  if (!p) {
    p = checkPolicy(policy);
    resolved.set(policy, p);
  }
  return p;
}

function checkPolicy(policy: RetryPolicy): ResolvedRetryPolicy {
  const p = { ...DEFAULT_RETRY_POLICY, ...stripUndefined(policy) };
  if (!(p.maximumAttempts >= 1) || !Number.isInteger(p.maximumAttempts)) {
    throw new RangeError(`retry.maximumAttempts must be an integer >= 1 (got ${p.maximumAttempts})`);
  }
  if (!(p.initialIntervalMs >= 0))
    throw new RangeError(`retry.initialIntervalMs must be >= 0 (got ${p.initialIntervalMs})`);
  if (!(p.maximumIntervalMs >= 0))
    throw new RangeError(`retry.maximumIntervalMs must be >= 0 (got ${p.maximumIntervalMs})`);
  if (!(p.backoffCoefficient >= 1))
    throw new RangeError(`retry.backoffCoefficient must be >= 1 (got ${p.backoffCoefficient})`);
  if (!(p.jitter >= 0 && p.jitter <= 1)) throw new RangeError(`retry.jitter must be between 0 and 1 (got ${p.jitter})`);
  return p;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The delay before attempt `nextAttempt` (2 for the first retry), with jitter drawn from
 * `random` (a number in [0, 1)).
 */
export function retryDelayMs(policy: ResolvedRetryPolicy, nextAttempt: number, random: number): number {
  const base = Math.min(
    policy.maximumIntervalMs,
    policy.initialIntervalMs * policy.backoffCoefficient ** Math.max(0, nextAttempt - 2),
  );
  const spread = base * policy.jitter * (random * 2 - 1);
  return Math.max(0, Math.min(policy.maximumIntervalMs, Math.round(base + spread)));
}

/** Whether `error` may be retried under `policy` (the attempt count is checked separately). */
export function isRetryable(policy: ResolvedRetryPolicy, error: unknown): boolean {
  if (error instanceof NonRetryableError) return false;
  // The policy's list is checked first: it can only make an error less retryable.
  for (const entry of policy.nonRetryableErrors) {
    if (typeof entry === "string") {
      if (error instanceof Error && error.name === entry) return false;
    } else if (error instanceof entry) {
      return false;
    }
  }
  if (error instanceof CairnError) return error.retryable;
  // A provider marks a definite failure with `retryable: false` (ModelProvider contract).
  if ((error as { retryable?: unknown } | null)?.retryable === false) return false;
  return true;
}
