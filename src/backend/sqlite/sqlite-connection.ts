import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import { StorageError } from "../../core/errors.ts";
import { CommitGroup } from "./sqlite-commit-group.ts";
import { toStorageError } from "./sqlite-errors.ts";
import { migrate } from "./sqlite-migrations.ts";
import type { SqliteSynchronous } from "./sqlite-options.ts";
import type { Db } from "./sqlite-statements.ts";
import { Doorbell } from "./sqlite-wake-ups.ts";

/**
 * One open database file and how every call of `SqliteBackend` runs on it: a write at the
 * durability it needs, a read, and what fails turned into a `StorageError` that names the file.
 */
export class SqliteConnection {
  /** The better-sqlite3 connection. */
  readonly db: Db;
  /** The database file, as given. */
  readonly path: string;
  readonly #durability: "process" | "machine";
  /**
   * The connection's current `synchronous` level. A write switches it only when it needs the
   * other level, so a run of heartbeats costs no pragma at all.
   */
  #sync: "FULL" | "NORMAL";
  /** The file's doorbell: rung after a commit that woke a run (`noteWakes`). */
  readonly bell: Doorbell;
  /** Set by a write that woke a run, until its commit rings the bell. */
  #wakes = false;
  readonly #group: CommitGroup;

  private constructor(db: Db, path: string, durability: "process" | "machine") {
    this.db = db;
    this.path = path;
    this.#durability = durability;
    this.#sync = durability === "machine" ? "FULL" : "NORMAL";
    this.bell = new Doorbell(path);
    const groupTransaction = db.transaction((transaction: () => void) => transaction());
    this.#group = new CommitGroup({
      db,
      alone: (sync, operation, write) => this.write(sync, operation, write),
      together: (sync, transaction) => this.write(sync, "group commit", () => groupTransaction.immediate(transaction)),
      failure: (error, operation) => toStorageError(error, path, operation),
    });
  }

  /** Opens the file, sets WAL, the busy timeout and foreign keys, and creates or checks the schema. */
  static open(path: string, options: { durability: "process" | "machine"; busyTimeoutMs: number }): SqliteConnection {
    const memory = path === ":memory:" || path === "";
    let db: Db | undefined;
    try {
      if (!memory) mkdirSync(dirname(resolve(path)), { recursive: true });
      db = new Database(path, { timeout: options.busyTimeoutMs });
      if (!memory) {
        const mode = db.pragma("journal_mode = WAL", { simple: true });
        if (mode !== "wal") {
          throw new StorageError(`"${path}" cannot use WAL mode (it is in ${String(mode)} mode)`);
        }
      }
      db.pragma("foreign_keys = ON");
      const connection = new SqliteConnection(db, path, options.durability);
      db.pragma(`synchronous = ${connection.#sync}`);
      migrate(db, path);
      return connection;
    } catch (error) {
      db?.close();
      throw toStorageError(error, path, "open");
    }
  }

  /** Closes the file (a second call does nothing). */
  close(): void {
    // Writes queued for the next group commit are written first (their callers are waiting).
    if (this.db.open) this.#group.flush();
    if (this.db.open) this.db.close();
    this.bell.close();
  }

  /**
   * Called inside a write that made a run runnable, ended one or asked for a stop (its plan has
   * wake-ups): once the write commits, the bell rings for every process on the file.
   */
  noteWakes(): void {
    this.#wakes = true;
  }

  /** The connection's `synchronous` setting as SQLite reports it. */
  get synchronous(): SqliteSynchronous {
    const level = this.db.pragma("synchronous", { simple: true });
    return (["OFF", "NORMAL", "FULL", "EXTRA"] as const)[level as number] ?? "OFF";
  }

  /**
   * Runs a write at the durability it needs. `synchronous` cannot change inside a transaction,
   * so it is set before; in WAL mode a FULL commit also makes every NORMAL commit before it
   * durable, since it fsyncs the log they were appended to.
   */
  write<T>(sync: boolean, operation: string, write: () => T): T {
    const level = sync && this.#durability === "machine" ? "FULL" : "NORMAL";
    this.#wakes = false;
    let result: T;
    try {
      if (level !== this.#sync) {
        // Not a prepared statement: SQLite applies `PRAGMA synchronous = x` when the statement is
        // compiled, so re-running a prepared one changes nothing. exec compiles it each time (~1 µs).
        this.db.exec(`PRAGMA synchronous = ${level}`);
        this.#sync = level;
      }
      result = write();
    } catch (error) {
      throw toStorageError(error, this.path, operation);
    } finally {
      // A write rolled back may have noted wake-ups: a ring too many costs the listeners one read.
      if (this.#wakes) this.bell.ring();
      this.#wakes = false;
    }
    return result;
  }

  /**
   * Runs a write in the next group commit (see {@link CommitGroup}): with the other writes this
   * process makes in the same turn of the event loop, in one transaction and one commit. Settles
   * once that commit is done.
   */
  group<T>(sync: boolean, operation: string, write: () => T): Promise<T> {
    return this.#group.write(sync, operation, write);
  }

  /** Runs a read; what fails comes out as a `StorageError` naming `operation` and the file. */
  read<T>(operation: string, read: () => T): T {
    try {
      return read();
    } catch (error) {
      throw toStorageError(error, this.path, operation);
    }
  }
}
