import type { Db } from "./sqlite-statements.ts";

/** One write waiting for its group's commit. */
interface Entry {
  readonly sync: boolean;
  readonly operation: string;
  readonly write: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/** What a commit group needs from its connection. */
export interface CommitGroupHost {
  readonly db: Db;
  /** Runs `write` alone, as one transaction at the durability it needs (the connection's `write`). */
  alone<T>(sync: boolean, operation: string, write: () => T): T;
  /** Runs the group's transaction: the durability it needs set before BEGIN, errors turned into `StorageError`s. */
  together(sync: boolean, transaction: () => void): void;
  /** Turns what a write threw into the error its caller gets (`toStorageError`). */
  failure(error: unknown, operation: string): Error;
}

/**
 * Group commit on SQLite (DESIGN §7, SQLite throughput): the writes the runs of one process make
 * in one turn of the event loop — the next steps of every run the last commit let go on, the
 * transitions of the runs that end together, runs started by one loop — go to the file in one
 * transaction with one commit, and so one fsync under `durability: "machine"`, synchronous when
 * any of them asks for it. The group leaves on the turn after its first write (`setImmediate`),
 * so it takes every write made in that turn; a lone write waits one turn and then runs alone,
 * exactly as it would without a group.
 *
 * Each write runs in a savepoint of its own: one that throws (a fence that refused, a run that
 * does not exist) is rolled back alone and fails alone, the others commit. No write's promise
 * settles before the commit: a step's result is durable before its workflow goes on. A commit
 * that fails fails every write of the group (none of them was written).
 */
export class CommitGroup {
  readonly #host: CommitGroupHost;
  readonly #savepoint: (write: () => unknown) => unknown;
  #queue: Entry[] = [];
  #scheduled = false;

  constructor(host: CommitGroupHost) {
    this.#host = host;
    // Called inside the group's transaction, a better-sqlite3 transaction function is a savepoint
    // (so are the role files' own transactions, nested in it).
    this.#savepoint = host.db.transaction((write: () => unknown) => write());
  }

  /** Queues a write for the group that leaves on the next turn; settles once it has committed. */
  write<T>(sync: boolean, operation: string, write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ sync, operation, write, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  /** Writes what is queued now, without waiting for the turn (before the connection closes). */
  flush(): void {
    this.#flush();
  }

  #flush(): void {
    this.#scheduled = false;
    const group = this.#queue;
    if (group.length === 0) return;
    this.#queue = [];
    const [only] = group;
    if (group.length === 1 && only) {
      try {
        only.resolve(this.#host.alone(only.sync, only.operation, only.write));
      } catch (error) {
        only.reject(error);
      }
      return;
    }
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
      this.#host.together(
        group.some((e) => e.sync),
        () => {
          outcomes.length = 0;
          for (const entry of group) {
            try {
              outcomes.push({ ok: true, value: this.#savepoint(entry.write) });
            } catch (error) {
              outcomes.push({ ok: false, error: this.#host.failure(error, entry.operation) });
            }
          }
        },
      );
    } catch (error) {
      for (const entry of group) entry.reject(this.#host.failure(error, entry.operation));
      return;
    }
    for (const [i, entry] of group.entries()) {
      const outcome = outcomes[i];
      if (outcome?.ok) entry.resolve(outcome.value);
      else entry.reject(outcome ? outcome.error : new Error("the group commit gave no outcome for this write"));
    }
  }
}
