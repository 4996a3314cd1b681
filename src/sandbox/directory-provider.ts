import { chown, mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { InvalidInputError, StorageError } from "../core/errors.ts";
import type { SandboxInfo, SandboxProvider, SandboxSpec } from "../core/sandbox.ts";
import type { DirectorySandbox, LiveRecord, SandboxHost } from "./directory-sandbox.ts";
import { SandboxDirectory, type SandboxRecord } from "./sandbox-directory.ts";
import { checkLabel, type NormalSpec, normalizeSpec, specDifference } from "./sandbox-spec.ts";
import { DirectorySnapshotStore, type SnapshotStore } from "./snapshot-store.ts";
import type { Owner } from "./workspace-files.ts";
import { removeTree } from "./workspace-tree.ts";

/** Options of the providers that keep their sandboxes in a host folder. */
export interface DirectoryProviderOptions {
  /**
   * The folder of the sandboxes: their workspaces, records and label index. Two providers (two
   * processes) on one folder see the same sandboxes. @default ".cairn/sandboxes"
   */
  dir?: string;
  /** Where snapshots are kept. @default a {@link DirectorySnapshotStore} in `<dir>/snapshots` */
  snapshots?: SnapshotStore;
}

/**
 * The lifecycle the local and bubblewrap providers share: `create` idempotent by label (the label
 * index is a file per label, created exclusively, so two processes creating one label get one
 * sandbox), `find` from any process on the same folder, `list`.
 */
export abstract class DirectoryProvider implements SandboxProvider {
  abstract readonly kind: string;
  abstract readonly isolated: boolean;
  protected readonly host: SandboxHost;

  constructor(options: DirectoryProviderOptions = {}, owner?: Owner) {
    const dir = resolve(options.dir ?? join(".cairn", "sandboxes"));
    this.host = {
      directory: new SandboxDirectory(dir),
      snapshots: options.snapshots ?? new DirectorySnapshotStore(join(dir, "snapshots")),
      ...(owner ? { owner } : {}),
    };
  }

  /** Refuses what this provider cannot honour in a spec (throws {@link InvalidInputError}). */
  protected abstract check(spec: NormalSpec): void;
  /** Throws when the provider cannot run on this machine, or not this spec (every create checks). */
  protected abstract available(spec?: NormalSpec): Promise<void>;
  /** A handle on a live (or lost) sandbox of this provider. */
  protected abstract open(record: LiveRecord): DirectorySandbox;

  async create(label: string, spec: SandboxSpec = {}): Promise<DirectorySandbox> {
    checkLabel(label);
    const normal = normalizeSpec(spec);
    this.check(normal);
    await this.available(normal);
    const { directory } = this.host;
    await directory.ready();
    for (let attempt = 0; attempt < 5; attempt++) {
      const existing = await this.#current(label);
      if (existing) {
        const sandbox = this.open(existing);
        if ((await sandbox.status()) === "live") return this.#reuse(sandbox, existing, normal);
        // Lost: retired (its commands killed, its label freed) for a new one, which the caller
        // fills from its last snapshot.
        await sandbox.destroy();
      }
      const fresh = await this.#make(label, normal);
      if (await directory.claim(label, fresh.id)) return this.open(fresh);
      // Another process created the label meanwhile: take theirs.
      await removeTree(directory.workspace(fresh.id));
      await directory.remove(fresh.id);
    }
    throw new StorageError(`could not create a sandbox for label "${label}": its label kept changing under it`);
  }

  async find(label: string): Promise<DirectorySandbox | undefined> {
    checkLabel(label);
    await this.host.directory.ready();
    const record = await this.#current(label);
    return record ? this.open(record) : undefined;
  }

  async list(): Promise<SandboxInfo[]> {
    await this.host.directory.ready();
    const records = await this.host.directory.records();
    return records.filter((r): r is LiveRecord => this.#mine(r)).map((r) => this.open(r).info);
  }

  /** The record of the sandbox holding the label, unless destroyed; a tombstone's label is freed. */
  async #current(label: string): Promise<LiveRecord | undefined> {
    const { directory } = this.host;
    const id = await directory.idOf(label);
    if (id === undefined) return undefined;
    const record = await directory.read(id);
    if (record !== undefined && record.kind !== this.kind) {
      throw new InvalidInputError(
        `sandbox label "${label}" belongs to a ${record.kind} sandbox (${id}) in ${directory.root}: destroy it with the ${record.kind} provider, or give this provider another dir`,
        [{ path: ["label"], message: "another provider's sandbox" }],
      );
    }
    if (record !== undefined && this.#mine(record)) return record;
    await directory.release(label, id);
    return undefined;
  }

  #mine(record: SandboxRecord): record is LiveRecord {
    return record.kind === this.kind && record.destroyedAt === undefined && record.spec !== undefined;
  }

  async #reuse(sandbox: DirectorySandbox, record: LiveRecord, spec: NormalSpec): Promise<DirectorySandbox> {
    const differs = specDifference(record.spec, spec);
    if (differs.length > 0) {
      throw new InvalidInputError(
        `sandbox label "${record.label}" is held by ${record.id}, made with another ${differs.join(", ")}: destroy it first, or use another name`,
        differs.map((field) => ({ path: ["spec", field], message: "differs from the existing sandbox" })),
      );
    }
    if (JSON.stringify(record.spec.env) === JSON.stringify(spec.env)) return sandbox;
    const updated = { ...record, spec: { ...record.spec, env: spec.env } };
    await this.host.directory.write(updated);
    return this.open(updated);
  }

  async #make(label: string, spec: NormalSpec): Promise<LiveRecord> {
    const { directory, owner } = this.host;
    const record: LiveRecord = { id: SandboxDirectory.newId(), label, kind: this.kind, createdAt: Date.now(), spec };
    const workspace = directory.workspace(record.id);
    await mkdir(workspace, { mode: 0o700 });
    if (owner) await chown(workspace, owner.uid, owner.gid);
    await directory.write(record);
    return record;
  }
}
