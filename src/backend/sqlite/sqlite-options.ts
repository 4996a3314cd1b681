/** Options of `SqliteBackend`. */
export interface SqliteBackendOptions {
  /**
   * Path of the database file; the file and its parent directory are created when missing.
   * `":memory:"` gives a private in-memory database that is gone when the backend closes.
   */
  path: string;
  /**
   * What a committed checkpoint survives. `"machine"`: a power loss or kernel crash, because
   * every completed step, transition and new run, and every write of waits, signals and stops is
   * fsynced (`synchronous=FULL`); start records, heartbeats, claims and lease renewals ride on
   * cheaper commits that a later fsync covers (a claim is always followed by a transition). The
   * steps, transitions and new runs of all the runs of one process in one turn of the event loop
   * share one transaction and one fsync (group commit). `"process"`: a crash of the process only; nothing
   * is fsynced on commit (`synchronous=NORMAL` throughout), which is several times faster.
   * @default "machine"
   */
  durability?: "process" | "machine";
  /**
   * How long a write waits for another connection (another process on the same file) to release
   * the write lock before it fails with a `StorageError`.
   * @default 5000
   */
  busyTimeoutMs?: number;
  /**
   * Bytes of JSON text above which a step's arguments or result are stored out of line: once per
   * content in the `blobs` table (keyed by sha-256), with a small reference in the step's row,
   * written in the same transaction. `loadSteps` returns the full values.
   * @default 262144 (256 KiB)
   */
  inlineLimitBytes?: number;
}

/** A value of SQLite's `synchronous` setting. */
export type SqliteSynchronous = "OFF" | "NORMAL" | "FULL" | "EXTRA";
