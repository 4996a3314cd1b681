import { setImmediate as nextTurn } from "node:timers/promises";
import { StorageRejectedError } from "../../../core/errors.ts";

/** What one caller of a batch gets: its value, or the error it alone failed with. */
export type Settled<R> = { ok: true; value: R } | { ok: false; error: unknown };

/** A promise's outcome as a {@link Settled}. */
export function settle<R>(promise: Promise<R>): Promise<Settled<R>> {
  return promise.then(
    (value): Settled<R> => ({ ok: true, value }),
    (error: unknown): Settled<R> => ({ ok: false, error }),
  );
}

/** Options of {@link CommitBatcher}. */
export interface CommitBatcherOptions<T, R> {
  /**
   * Writes one batch, in one transaction, and says how each item fared, in the batch's order. A
   * throw fails every item of the batch with that error, except a `StorageRejectedError` (the
   * store refused a value, nothing was written): then each item is written alone, so that only
   * the one that carries the value fails.
   */
  run(batch: readonly T[]): Promise<Settled<R>[]>;
  /**
   * Items with the same key never share a batch: the later one waits for the next, so that it is
   * planned against what the earlier one committed. @default every item its own key
   */
  key?: (item: T) => string;
  /** Most items in one batch. @default 200 */
  maxItems?: number;
}

interface Entry<T, R> {
  item: T;
  resolve: (value: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: the calls of all runs a process drives go out in batches, one statement or
 * transaction per batch, one batch at a time. A batch leaves on the turn of the event loop after
 * its first call (`setImmediate`), so it takes every call made in the same turn — fifty runs
 * started by one loop, the fifty next steps of the runs the last batch's commit let go on, the
 * wake-ups that one read of the socket delivered — rather than the first alone and the others
 * one commit later, which would split the runs into cohorts that take turns for ever. A lone call
 * waits one turn, microseconds; calls made while a batch is being written share the next one.
 * Items keep their order: a batch takes the oldest items it can.
 */
export class CommitBatcher<T, R> {
  readonly #run: (batch: readonly T[]) => Promise<Settled<R>[]>;
  readonly #key: ((item: T) => string) | undefined;
  readonly #maxItems: number;
  #queue: Entry<T, R>[] = [];
  #busy = false;

  constructor(options: CommitBatcherOptions<T, R>) {
    this.#run = options.run;
    this.#key = options.key;
    this.#maxItems = options.maxItems ?? 200;
  }

  /** Queues one item; settles once its batch is committed (or failed). */
  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      if (!this.#busy) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#busy = true;
    try {
      for (;;) {
        await nextTurn();
        if (this.#queue.length === 0) break;
        const batch = this.#take();
        let outcomes: Settled<R>[];
        try {
          outcomes = await this.#run(batch.map((b) => b.item));
        } catch (error) {
          if (!(error instanceof StorageRejectedError) || batch.length === 1) {
            for (const entry of batch) entry.reject(error);
            continue;
          }
          // The store refused a value of one item (the batch wrote nothing): each item alone, so
          // only the one that carries it fails.
          outcomes = await Promise.all(batch.map((b) => this.#alone(b.item)));
        }
        for (const [i, entry] of batch.entries()) {
          const outcome = outcomes[i];
          if (outcome?.ok) entry.resolve(outcome.value);
          else entry.reject(outcome ? outcome.error : new Error("the batch gave no outcome for this item"));
        }
      }
    } finally {
      this.#busy = false;
    }
  }

  async #alone(item: T): Promise<Settled<R>> {
    try {
      const [outcome] = await this.#run([item]);
      return outcome ?? { ok: false, error: new Error("the batch gave no outcome for this item") };
    } catch (error) {
      return { ok: false, error };
    }
  }

  /** The oldest items, at most `maxItems`, no two with one key; the rest stay queued in order. */
  #take(): Entry<T, R>[] {
    const key = this.#key;
    if (!key) return this.#queue.splice(0, this.#maxItems);
    const batch: Entry<T, R>[] = [];
    const rest: Entry<T, R>[] = [];
    const keys = new Set<string>();
    for (const entry of this.#queue) {
      const k = key(entry.item);
      if (batch.length < this.#maxItems && !keys.has(k)) {
        keys.add(k);
        batch.push(entry);
      } else rest.push(entry);
    }
    this.#queue = rest;
    return batch;
  }
}
