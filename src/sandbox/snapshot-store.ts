import { createReadStream } from "node:fs";
import { copyFile, mkdir, rename, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { InvalidInputError } from "../core/errors.ts";
import { isCode } from "./sandbox-directory.ts";

/**
 * Where snapshots of workspaces are kept, by id (`sha256:<hex>` of the archive). A provider hands
 * it archives it made and reads them back; the store never looks inside. The directory store below
 * is the default; a blob store (the backend's, an object store) fills the same three calls.
 */
export interface SnapshotStore {
  /** Whether the store holds `id`. */
  has(id: string): Promise<boolean>;
  /**
   * Keeps the archive in the local file `file` (a temporary file: the store moves or copies it,
   * and the caller deletes what is left) under `id`, its hash. Keeping an id the store holds
   * already stores nothing more.
   */
  put(id: string, file: string): Promise<void>;
  /** The archive's bytes, or undefined when the store does not hold `id`. */
  read(id: string): Promise<Readable | undefined>;
}

const SNAPSHOT_ID = /^sha256:[0-9a-f]{64}$/;

/** Checks a snapshot id (`sha256:` and 64 lowercase hex digits). */
export function checkSnapshotId(id: unknown): string {
  if (typeof id !== "string" || !SNAPSHOT_ID.test(id)) {
    throw new InvalidInputError(
      `"${String(id)}" is not a snapshot id: give the id snapshot() returned (sha256:<64 hex digits>)`,
      [{ path: ["snapshot"], message: "not a snapshot id" }],
    );
  }
  return id;
}

/** Snapshots as files `<dir>/sha256-<hex>.tar`: content-addressed, so one copy per content. */
export class DirectorySnapshotStore implements SnapshotStore {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  #file(id: string): string {
    return join(this.dir, `${checkSnapshotId(id).replace(":", "-")}.tar`);
  }

  async has(id: string): Promise<boolean> {
    return stat(this.#file(id)).then(
      () => true,
      (error) => {
        if (isCode(error, "ENOENT")) return false;
        throw error;
      },
    );
  }

  async put(id: string, file: string): Promise<void> {
    const target = this.#file(id);
    if (await this.has(id)) return;
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    try {
      // Same content, same name: a concurrent put of the same id replaces it by equal bytes.
      await rename(file, target);
    } catch (error) {
      if (!isCode(error, "EXDEV")) throw error;
      const partial = `${target}.${process.pid}.partial`;
      await copyFile(file, partial);
      await rename(partial, target);
      await unlink(file);
    }
  }

  async read(id: string): Promise<Readable | undefined> {
    if (!(await this.has(id))) return undefined;
    return createReadStream(this.#file(id));
  }
}
