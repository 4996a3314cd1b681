import { closeSync, constants, type FSWatcher, openSync, watch, writeSync } from "node:fs";
import type { RunState } from "../../core/run-state.ts";
import type { Wake } from "../contract/wake-ups.ts";
import { wakeFor } from "../rules/transition-rules.ts";
import type { Db, Stmt } from "./sqlite-statements.ts";

const ONE_BYTE = Buffer.from([0x2a]);

/**
 * The doorbell of a database file: `<file>-wake`, beside `-wal` and `-shm`. A write that made a
 * run runnable, ended one or asked a worker to stop one writes one byte to it after its commit;
 * every process subscribed to the file watches it (`fs.watch`: inotify, kqueue, …) and reads what
 * changed from the database. The byte says nothing: the database is the only record, so a ring
 * that is lost or read twice costs a poll's delay or a read, never a wake-up's meaning.
 * A private in-memory database (`:memory:`) has no file; its bell rings only in its process.
 */
export class Doorbell {
  /** The bell's file, undefined for `:memory:`. */
  readonly file: string | undefined;
  readonly #local = new Set<() => void>();
  #fd: number | undefined;

  constructor(databasePath: string) {
    const memory = databasePath === ":memory:" || databasePath === "";
    this.file = memory ? undefined : `${databasePath}-wake`;
  }

  /** Rings (after a commit). Best effort: a bell that cannot ring leaves the other processes their poll. */
  ring(): void {
    if (!this.file) {
      for (const listener of this.#local) listener();
      return;
    }
    try {
      this.#fd ??= this.#openFile();
      writeSync(this.#fd, ONE_BYTE, 0, 1, 0);
    } catch {
      // The poll covers it.
    }
  }

  /**
   * Calls `onRing` whenever the bell rings (in any process for a file), and `onLost` when the
   * watch failed and was set up again (rings may have been missed). Returns the stop function.
   */
  listen(onRing: () => void, onLost: () => void): () => void {
    const file = this.file;
    if (!file) {
      this.#local.add(onRing);
      return () => this.#local.delete(onRing);
    }
    let watcher: FSWatcher | undefined;
    let stopped = false;
    let retry: ReturnType<typeof setTimeout> | undefined;
    const start = () => {
      retry = undefined;
      if (stopped) return;
      try {
        closeSync(this.#openFile());
        watcher = watch(file, { persistent: false }, (event) => {
          // A rename (the file replaced or removed) ends this watch: watch the new file.
          if (event === "rename") restart();
          else onRing();
        });
        watcher.on("error", restart);
      } catch {
        retry = setTimeout(start, 1000);
        retry.unref?.();
      }
    };
    const restart = () => {
      watcher?.close();
      watcher = undefined;
      if (stopped || retry) return;
      onLost();
      retry = setTimeout(start, 50);
      retry.unref?.();
    };
    start();
    return () => {
      stopped = true;
      if (retry) clearTimeout(retry);
      watcher?.close();
    };
  }

  /** Closes the bell's file. */
  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }

  #openFile(): number {
    return openSync(this.file as string, constants.O_WRONLY | constants.O_CREAT, 0o644);
  }
}

/**
 * `subscribe` of `SqliteBackend` (`WakeUps`): on each ring, reads the transitions committed since
 * the last read (the transition feed's order) and tells each listener the runs that became
 * runnable or ended; then the leased runs with a stop asked of them that it had not told of yet.
 */
export class SqliteWakeUps {
  readonly #db: Db;
  readonly #bell: Doorbell;
  readonly #listeners = new Set<(wake: Wake) => void>();
  readonly #feed: Stmt<[number, number], { feed_position: number; run_id: string; to_state: RunState }>;
  readonly #latest: Stmt<[], number | null>;
  readonly #stops: Stmt<[], string>;
  #position = 0;
  #stopsTold = new Set<string>();
  #stopListening: (() => void) | undefined;
  #scheduled = false;

  constructor(db: Db, bell: Doorbell) {
    this.#db = db;
    this.#bell = bell;
    this.#feed = db.prepare(
      "SELECT feed_position, run_id, to_state FROM transitions WHERE feed_position > ? ORDER BY feed_position LIMIT ?",
    );
    this.#latest = db.prepare<[], number | null>("SELECT max(feed_position) FROM transitions").pluck();
    // The terms imply those of the partial index runs_stop_requested.
    this.#stops = db
      .prepare<[], string>("SELECT id FROM runs WHERE stop_request IS NOT NULL AND lease_owner IS NOT NULL")
      .pluck();
  }

  subscribe(listener: (wake: Wake) => void): () => void {
    if (this.#listeners.size === 0) {
      this.#position = this.#latest.get() ?? 0;
      this.#stopsTold = new Set(this.#stops.all());
      this.#stopListening = this.#bell.listen(
        () => this.#schedule(),
        () => this.#tell({ kind: "reconnected" }),
      );
    }
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size > 0) return;
      this.#stopListening?.();
      this.#stopListening = undefined;
    };
  }

  /** Stops listening (the backend closes). */
  close(): void {
    this.#listeners.clear();
    this.#stopListening?.();
    this.#stopListening = undefined;
  }

  /** Rings that come in one turn are read once. */
  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#read();
    });
  }

  #read(): void {
    if (this.#listeners.size === 0 || !this.#db.open) return;
    try {
      for (;;) {
        const rows = this.#feed.all(this.#position, 500);
        for (const row of rows) {
          this.#position = row.feed_position;
          const wake = wakeFor(row.run_id, row.to_state);
          if (wake) this.#tell(wake);
        }
        if (rows.length < 500) break;
      }
      const stops = new Set(this.#stops.all());
      for (const runId of stops) if (!this.#stopsTold.has(runId)) this.#tell({ kind: "stop", runId });
      this.#stopsTold = stops;
    } catch {
      // The file is busy or gone: the listeners look again, and the poll covers the rest.
      this.#tell({ kind: "reconnected" });
    }
  }

  #tell(wake: Wake): void {
    for (const listener of this.#listeners) {
      try {
        listener(wake);
      } catch {
        // A listener's failure is its own.
      }
    }
  }
}
