import { createHash, randomBytes } from "node:crypto";
import { link, mkdir, readdir, readFile, rename, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { NormalSpec } from "./sandbox-spec.ts";

/**
 * What a provider keeps of one sandbox, beside its workspace (so that it survives the workspace's
 * removal): enough for `find(label)` from another process after a crash to hand it out again.
 * A destroyed sandbox keeps a tombstone (no spec), so every handle on it says `destroyed`.
 */
export interface SandboxRecord {
  id: string;
  label: string;
  kind: string;
  createdAt: number;
  spec?: NormalSpec;
  destroyedAt?: number;
}

/**
 * The directory a provider keeps its sandboxes in:
 *
 * ```text
 * <root>/<id>/              the workspace of sandbox <id>
 * <root>/meta/<id>.json     its record (mode 0600: the spec's env may hold secrets)
 * <root>/labels/<sha256>    the id of the sandbox holding a label (created exclusively)
 * <root>/procs/<id>/<pid>   its running commands (for a destroy from another process)
 * <root>/tmp/               archives and restores in progress
 * ```
 */
export class SandboxDirectory {
  readonly root: string;
  #ready: Promise<void> | undefined;

  constructor(root: string) {
    this.root = root;
  }

  /** A new sandbox id. */
  static newId(): string {
    return `sbx-${randomBytes(10).toString("hex")}`;
  }

  /** Creates the directory's folders once. */
  ready(): Promise<void> {
    this.#ready ??= (async () => {
      // Enterable (not readable) by others: bubblewrap started as another user binds workspaces.
      await mkdir(this.root, { recursive: true, mode: 0o711 });
      for (const sub of ["meta", "labels", "procs", "tmp"]) {
        await mkdir(join(this.root, sub), { recursive: true, mode: 0o700 });
      }
    })();
    return this.#ready;
  }

  workspace(id: string): string {
    return join(this.root, id);
  }

  procs(id: string): string {
    return join(this.root, "procs", id);
  }

  tmp(name: string): string {
    return join(this.root, "tmp", `${name}-${randomBytes(6).toString("hex")}`);
  }

  #meta(id: string): string {
    return join(this.root, "meta", `${id}.json`);
  }

  #label(label: string): string {
    return join(this.root, "labels", createHash("sha256").update(label).digest("hex"));
  }

  async read(id: string): Promise<SandboxRecord | undefined> {
    try {
      return JSON.parse(await readFile(this.#meta(id), "utf8")) as SandboxRecord;
    } catch (error) {
      if (isCode(error, "ENOENT")) return undefined;
      throw error;
    }
  }

  /** Writes a record atomically (a reader sees the old one or the new one, never half). */
  async write(record: SandboxRecord): Promise<void> {
    const tmp = this.tmp("meta");
    await writeFile(tmp, JSON.stringify(record), { mode: 0o600 });
    await rename(tmp, this.#meta(record.id));
  }

  /** Forgets a record (of a sandbox that never held its label). */
  async remove(id: string): Promise<void> {
    await unlink(this.#meta(id)).catch((error) => {
      if (!isCode(error, "ENOENT")) throw error;
    });
  }

  /** Every record, tombstones included. */
  async records(): Promise<SandboxRecord[]> {
    const names = (await readdir(join(this.root, "meta"))).filter((n) => n.endsWith(".json"));
    const records = await Promise.all(names.map((n) => this.read(n.slice(0, -".json".length))));
    return records.filter((r): r is SandboxRecord => r !== undefined);
  }

  /** The id the label points at, if any. */
  async idOf(label: string): Promise<string | undefined> {
    try {
      return (await readFile(this.#label(label), "utf8")) || undefined;
    } catch (error) {
      if (isCode(error, "ENOENT")) return undefined;
      throw error;
    }
  }

  /**
   * Points the label at `id` unless it points somewhere already: a hard link of a complete file
   * is atomic and exclusive, so of two processes creating one label at once exactly one wins.
   */
  async claim(label: string, id: string): Promise<boolean> {
    const tmp = this.tmp("label");
    await writeFile(tmp, id, { mode: 0o600 });
    try {
      await link(tmp, this.#label(label));
      return true;
    } catch (error) {
      if (isCode(error, "EEXIST")) return false;
      throw error;
    } finally {
      await unlink(tmp);
    }
  }

  /**
   * Frees the label when it still points at `id`. Between the read and the unlink another process
   * could re-point it; callers hold the run's lease, which makes that a lost worker's race.
   */
  async release(label: string, id: string): Promise<void> {
    if ((await this.idOf(label)) !== id) return;
    await unlink(this.#label(label)).catch((error) => {
      if (!isCode(error, "ENOENT")) throw error;
    });
  }
}

/** Whether `error` is a Node system error with this code. */
export function isCode(error: unknown, code: string): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === code;
}
