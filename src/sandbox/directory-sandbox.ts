import { mkdir, realpath, rename, rm, stat } from "node:fs/promises";
import { relative } from "node:path";
import { InvalidInputError, SandboxLostError, StorageError } from "../core/errors.ts";
import type { ExecOptions, ExecResult, Sandbox, SandboxInfo, SandboxSnapshot, SandboxStatus } from "../core/sandbox.ts";
import { checkText } from "../core/text.ts";
import { type CommandPlan, runCommand } from "./command-runner.ts";
import { killGroup, RunningCommands } from "./running-commands.ts";
import type { SandboxDirectory, SandboxRecord } from "./sandbox-directory.ts";
import { checkEnv, type NormalSpec } from "./sandbox-spec.ts";
import { checkSnapshotId, type SnapshotStore } from "./snapshot-store.ts";
import { archiveWorkspace, extractArchive } from "./workspace-archive.ts";
import { type Owner, readWorkspaceFile, resolveExisting, writeWorkspaceFile } from "./workspace-files.ts";
import { chownTree, removeTree } from "./workspace-tree.ts";

/** What the sandboxes of one provider share. */
export interface SandboxHost {
  directory: SandboxDirectory;
  snapshots: SnapshotStore;
  /** The host user that owns workspace files (bubblewrap started unprivileged by root). */
  owner?: Owner;
}

/** A live sandbox's record: it has its spec. */
export type LiveRecord = SandboxRecord & { spec: NormalSpec };

/**
 * A sandbox whose workspace is a host folder under the provider's directory: everything but how
 * a command is started (the provider's {@link DirectorySandbox.prepare}) is the same for the local
 * and the bubblewrap providers — files confined to the workspace, snapshots, status, destroy.
 */
export abstract class DirectorySandbox implements Sandbox {
  readonly info: SandboxInfo;
  protected readonly record: LiveRecord;
  protected readonly host: SandboxHost;
  readonly #commands: RunningCommands;

  constructor(host: SandboxHost, record: LiveRecord, info: SandboxInfo) {
    this.host = host;
    this.record = record;
    this.info = info;
    this.#commands = new RunningCommands(host.directory.procs(record.id));
  }

  /** The workspace's folder on the host. */
  get hostWorkspace(): string {
    return this.host.directory.workspace(this.record.id);
  }

  /**
   * How to start `argv` in this sandbox, in the workspace folder `cwd` (relative, `""` for the
   * workspace itself), with exactly the environment `env` (the spec's and the call's).
   */
  protected abstract prepare(argv: string[], cwd: string, env: Record<string, string>): Promise<CommandPlan>;

  async exec(command: string | readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    const argv = commandArgv(command);
    checkExecOptions(options);
    const env = { ...this.record.spec.env, ...checkEnv(options.env, "exec env") };
    await this.#requireLive();
    const cwd = options.cwd === undefined ? "" : await this.#cwd(options.cwd);
    const plan = await this.prepare(argv, cwd, env);
    const commands = this.#commands;
    const directory = this.host.directory;
    const id = this.record.id;
    return runCommand(plan, options, {
      async started(pid) {
        await commands.add(pid);
        // A destroy that ran between the spawn and the record would have missed this command.
        if ((await directory.read(id))?.destroyedAt !== undefined) killGroup(pid);
      },
      ended: (pid) => commands.remove(pid),
    });
  }

  async #cwd(cwd: string): Promise<string> {
    const real = await resolveExisting(this.hostWorkspace, cwd);
    if (!(await stat(real)).isDirectory()) {
      throw new InvalidInputError(`exec cwd "${cwd}" is not a folder of the workspace`, [
        { path: ["cwd"], message: "not a folder" },
      ]);
    }
    return relative(await realpath(this.hostWorkspace), real);
  }

  async readFile(path: string): Promise<Uint8Array> {
    await this.#requireLive();
    return readWorkspaceFile(this.hostWorkspace, path);
  }

  async writeFile(path: string, data: string | Uint8Array): Promise<void> {
    if (typeof data !== "string" && !(data instanceof Uint8Array)) {
      throw new InvalidInputError("writeFile data must be a string or a Uint8Array", [
        { path: ["data"], message: "not text or bytes" },
      ]);
    }
    await this.#requireLive();
    await writeWorkspaceFile(this.hostWorkspace, path, data, this.host.owner);
  }

  async snapshot(): Promise<SandboxSnapshot> {
    await this.#requireLive();
    const file = `${this.host.directory.tmp("snapshot")}.tar`;
    try {
      const { id, bytes } = await archiveWorkspace(this.hostWorkspace, file);
      await this.host.snapshots.put(id, file);
      return { id, bytes };
    } finally {
      await rm(file, { force: true });
    }
  }

  /**
   * Replaces the workspace by a snapshot (a lost sandbox's too: it is live again). Its running
   * commands are killed first: they would go on in a folder that is no longer the workspace.
   */
  async restore(snapshot: string): Promise<void> {
    const id = checkSnapshotId(snapshot);
    if ((await this.status()) === "destroyed") throw this.#lost("destroyed");
    const archive = await this.host.snapshots.read(id);
    if (archive === undefined) {
      throw new InvalidInputError(`no snapshot ${id} in the snapshot store: give an id snapshot() returned`, [
        { path: ["snapshot"], message: "unknown snapshot" },
      ]);
    }
    await this.#commands.killAll();
    const fresh = this.host.directory.tmp("restore");
    await mkdir(fresh, { mode: 0o700 });
    try {
      const got = await extractArchive(archive, fresh);
      if (got !== id) throw new StorageError(`snapshot ${id} is damaged: its bytes hash to ${got}`);
      if (this.host.owner) await chownTree(fresh, this.host.owner);
      const old = this.host.directory.tmp("old");
      await rename(this.hostWorkspace, old).catch(() => undefined);
      await rename(fresh, this.hostWorkspace);
      await removeTree(old);
    } finally {
      await removeTree(fresh);
    }
  }

  async status(): Promise<SandboxStatus> {
    const record = await this.host.directory.read(this.record.id);
    if (record?.destroyedAt !== undefined) return "destroyed";
    if (record === undefined) return "lost";
    const dir = await stat(this.hostWorkspace).catch(() => undefined);
    return dir?.isDirectory() ? "live" : "lost";
  }

  /**
   * Marks it destroyed (a tombstone without its spec, so every handle and `find` see it), kills its
   * commands, frees its label and removes its workspace. Each part is idempotent, so destroying it
   * again finishes a destroy that a crash interrupted, and otherwise does nothing.
   */
  async destroy(): Promise<void> {
    const { directory } = this.host;
    const record = await directory.read(this.record.id);
    if (record?.destroyedAt === undefined) {
      const { id, label, kind, createdAt } = this.record;
      await directory.write({ id, label, kind, createdAt, destroyedAt: Date.now() });
    }
    await this.#commands.killAll();
    await this.#commands.clear();
    await directory.release(this.record.label, this.record.id);
    await removeTree(this.hostWorkspace);
  }

  async #requireLive(): Promise<void> {
    const status = await this.status();
    if (status !== "live") throw this.#lost(status);
  }

  #lost(status: SandboxStatus): SandboxLostError {
    const { id, label } = this.record;
    const why = status === "destroyed" ? "was destroyed" : "is lost (its workspace is gone without a destroy)";
    return new SandboxLostError(
      `sandbox ${id} (label "${label}") ${why}: create the label again and restore its last snapshot, or rebuild it`,
      id,
    );
  }
}

/** A shell line (run by `/bin/sh -c`) or an argument vector, checked. */
export function commandArgv(command: string | readonly string[]): string[] {
  if (typeof command === "string") return ["/bin/sh", "-c", checkText(command, "exec command", { maxLength: 131_072 })];
  if (!Array.isArray(command) || command.length === 0) {
    throw new InvalidInputError("exec command must be a shell line or a non-empty array of arguments", [
      { path: ["command"], message: "empty" },
    ]);
  }
  return command.map((arg, i) => checkText(arg, `exec command[${i}]`, { maxLength: 131_072, allowEmpty: i > 0 }));
}

/** Refuses exec options that are not what their types say (a timeout of NaN would kill at once). */
function checkExecOptions(options: ExecOptions): void {
  const { timeoutMs, stdin, logPath } = options;
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new InvalidInputError(`exec timeoutMs must be a positive number of milliseconds (got ${String(timeoutMs)})`, [
      { path: ["timeoutMs"], message: "not a positive number" },
    ]);
  }
  if (stdin !== undefined && typeof stdin !== "string") {
    throw new InvalidInputError("exec stdin must be a string", [{ path: ["stdin"], message: "not a string" }]);
  }
  if (logPath !== undefined) checkText(logPath, "exec logPath", { maxLength: 4096 });
}
