import { CairnError, StorageError, StorageRejectedError } from "../../core/errors.ts";

/**
 * Turns what better-sqlite3 or the file system threw into a {@link StorageError} whose message
 * names the database file and, where the cause is known, what to do about it. Cairn errors
 * (a refused transition, a lost lease) pass through unchanged.
 */
export function toStorageError(error: unknown, file: string, operation: string): Error {
  if (error instanceof CairnError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const detail = error instanceof Error ? error.message : String(error);
  const where = `SQLite ${operation} on "${file}"`;
  const hint = typeof code === "string" ? hintFor(code) : undefined;
  if (typeof code === "string" && /^SQLITE_(CONSTRAINT|TOOBIG|MISMATCH)/.test(code)) {
    return new StorageRejectedError(
      `SQLite refused a value on ${operation} on "${file}": ${detail} (${code}); writing it again would fail the same way`,
      {},
      { cause: error },
    );
  }
  return new StorageError(`${where} failed: ${detail}${code ? ` (${String(code)})` : ""}${hint ? `; ${hint}` : ""}`, {
    cause: error,
  });
}

/** The hint for a code or, for an extended SQLite code (SQLITE_IOERR_FSYNC), for its base code. */
function hintFor(code: string): string | undefined {
  for (let c = code; c.includes("_"); c = c.slice(0, c.lastIndexOf("_"))) {
    const hint = HINTS[c];
    if (hint) return hint;
  }
  return HINTS[code];
}

/** What to do about the errors a user can fix, by SQLite result code or Node error code. */
const HINTS: Readonly<Record<string, string>> = {
  SQLITE_BUSY:
    "another connection held the write lock for longer than the busy timeout; look for a process keeping a long transaction open on this file, or raise the busyTimeoutMs option",
  SQLITE_LOCKED: "the database is locked by another statement of this connection; do not share the file handle",
  SQLITE_READONLY: "the file or its directory is read-only; give the process write access or choose another path",
  SQLITE_CANTOPEN: "the file cannot be opened; check that its directory exists and is writable, or choose another path",
  SQLITE_PERM: "permission denied; give the process access to the file and its directory",
  SQLITE_FULL: "the disk is full; free space and retry",
  SQLITE_IOERR: "the disk reported an I/O error; check the device and free space",
  SQLITE_CORRUPT: "the file is damaged; restore it from a backup",
  SQLITE_NOTADB: "the file is not a SQLite database; point the path option at a new file or a Cairn database",
  EACCES: "permission denied; choose a directory the process can write to",
  EPERM: "permission denied; choose a directory the process can write to",
  ENOTDIR: "a part of the path is a file, not a directory; choose another path",
  EEXIST: "a part of the path exists as a file, not a directory; choose another path",
  EROFS: "the file system is read-only; choose a writable path",
  ENOSPC: "the disk is full; free space and retry",
};
