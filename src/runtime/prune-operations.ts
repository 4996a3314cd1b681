import type { RuntimeBackend } from "../backend/backend.ts";
import type { Clock } from "../core/clock.ts";
import { InvalidInputError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import { DEFAULT_PRUNE_BATCH_SIZE, parseDuration, pruneStates, type RetentionPolicy } from "../core/retention.ts";
import type { RunState } from "../core/run-state.ts";

/** Options of `Runtime.prune` (DESIGN §7, "Retention"). */
export interface PruneOptions {
  /** Prune runs that ended longer ago than this: a duration such as `"30d"`, `"12h"`, or milliseconds. */
  olderThan: string | number;
  /** The ended states pruned. @default every terminal state but INTERRUPTED */
  states?: readonly RunState[];
  /** Only runs of this agent. @default every agent */
  agent?: string;
  /** Runs per batch: each batch is one short transaction. @default 500 */
  batchSize?: number;
  /** Count (and list) the runs that would be pruned; delete nothing. @default false */
  dryRun?: boolean;
}

/** What `Runtime.prune` did. */
export interface PruneResult {
  /** Runs deleted (with `dryRun`: that would be). */
  pruned: number;
  /** Their ids, batch by batch. */
  runIds: string[];
  /** The batches it took (one transaction each). */
  batches: number;
  /** The cutoff: runs whose last transition is earlier were taken (milliseconds since the epoch). */
  endedBefore: number;
  dryRun: boolean;
}

/** The request of every batch of a prune, its options checked. */
function batchRequest(options: PruneOptions, now: number) {
  if (options === null || typeof options !== "object") {
    throw new InvalidInputError('prune needs options, e.g. prune({ olderThan: "30d" })');
  }
  const limit = options.batchSize ?? DEFAULT_PRUNE_BATCH_SIZE;
  if (!(Number.isSafeInteger(limit) && limit >= 1)) {
    throw new InvalidInputError(`prune batchSize must be a whole number, 1 or more (got ${String(limit)})`);
  }
  if (options.agent !== undefined && (typeof options.agent !== "string" || options.agent === "")) {
    throw new InvalidInputError("prune agent must be an agent's name");
  }
  return {
    endedBefore: now - parseDuration(options.olderThan, "prune olderThan"),
    states: pruneStates(options.states),
    ...(options.agent === undefined ? {} : { agent: options.agent }),
    limit,
  };
}

/**
 * Deletes the runs that ended longer ago than `olderThan`, batch after batch until a batch comes
 * back short, and returns the totals. `keepGoing` is asked before each batch (a worker's loop stops
 * on shutdown); between batches the event loop turns, so runs go on executing.
 */
export async function pruneRuns(
  backend: RuntimeBackend,
  clock: Clock,
  options: PruneOptions,
  keepGoing: () => boolean = () => true,
): Promise<PruneResult> {
  const request = batchRequest(options, clock.now());
  const dryRun = options.dryRun === true;
  const result: PruneResult = { pruned: 0, runIds: [], batches: 0, endedBefore: request.endedBefore, dryRun };
  let after: string | undefined;
  while (keepGoing()) {
    const { runIds } = await backend.pruneRuns({ ...request, dryRun, ...(after === undefined ? {} : { after }) });
    result.batches += 1;
    result.pruned += runIds.length;
    result.runIds.push(...runIds);
    after = runIds.at(-1);
    if (runIds.length < request.limit) break;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return result;
}

/**
 * The worker's background prune (`RuntimeOptions.retention`): a pass of {@link pruneRuns} every
 * `every` (default an hour; the first a minute after start), never two at once, stopped between
 * batches on shutdown. A pass that fails is logged and tried again at the next tick.
 */
export class RetentionLoop {
  readonly #policy: RetentionPolicy;
  readonly #everyMs: number;
  readonly #backend: RuntimeBackend;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #timer: NodeJS.Timeout | undefined;
  #pass: Promise<void> | undefined;
  #stopped = false;

  constructor(policy: RetentionPolicy, backend: RuntimeBackend, clock: Clock, logger: Logger) {
    this.#policy = policy;
    this.#backend = backend;
    this.#clock = clock;
    this.#logger = logger;
    this.#everyMs = parseDuration(policy.every ?? "1h", "retention.every");
    batchRequest(policy, 0);
  }

  /** Starts the ticks; the first pass after `firstMs` (default: a minute, or `every` when shorter). */
  start(firstMs = Math.min(60_000, this.#everyMs)): void {
    if (this.#stopped || this.#timer) return;
    this.#timer = setTimeout(() => this.#tick(), firstMs);
    this.#timer.unref();
  }

  /** Runs one pass now (unless one is running) and waits for it. */
  async runOnce(): Promise<void> {
    this.#pass ??= pruneRuns(this.#backend, this.#clock, this.#policy, () => !this.#stopped)
      .then((result) => {
        if (result.pruned > 0)
          this.#logger.info({ ...result, runIds: undefined }, `retention: pruned ${result.pruned} ended runs`);
      })
      .catch((error: unknown) =>
        this.#logger.warn({ error: String(error) }, "retention: prune failed; trying again later"),
      )
      .finally(() => {
        this.#pass = undefined;
      });
    return this.#pass;
  }

  /** Stops the ticks and waits for a pass in flight to end its batch. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#pass;
  }

  #tick(): void {
    void this.runOnce().finally(() => {
      if (this.#stopped) return;
      this.#timer = setTimeout(() => this.#tick(), this.#everyMs);
      this.#timer.unref();
    });
  }
}
