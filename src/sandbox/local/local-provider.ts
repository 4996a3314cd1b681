import { InvalidInputError } from "../../core/errors.ts";
import type { SandboxInfo } from "../../core/sandbox.ts";
import type { CommandPlan } from "../command-runner.ts";
import { DirectoryProvider, type DirectoryProviderOptions } from "../directory-provider.ts";
import { DirectorySandbox, type LiveRecord, type SandboxHost } from "../directory-sandbox.ts";
import type { NormalSpec } from "../sandbox-spec.ts";

/** Options of {@link LocalSandboxProvider}. */
export type LocalSandboxOptions = DirectoryProviderOptions;

/**
 * Sandboxes that isolate **nothing**: a command runs as the host user, on the host's file system
 * and network, with no limits but the wall clock. For a machine without bubblewrap (macOS while
 * developing); its sandboxes say `isolated: false`, which the runtime shows wherever they appear.
 *
 * What it keeps of a sandbox is the lifecycle: a workspace folder (the command's working directory
 * and `HOME`), create-by-label, an environment of only `PATH` (the host's), `HOME` and what the
 * spec and the call pass, the output streamed and logged, snapshots, and the command's process
 * group killed on timeout, abort, destroy and its own end (a process that leaves the group with
 * `setsid` escapes: nothing isolates it). A mount is refused unless its `path` is its `host` (the
 * host's folders are all there already; nothing is bound or made read-only).
 *
 * @example
 * import { LocalSandboxProvider } from "cairn/sandbox";
 * const sandboxes = new LocalSandboxProvider({ dir: ".cairn/sandboxes" });
 * const sandbox = await sandboxes.create("run-1/build", { env: { CI: "1" } });
 * const { exitCode, tail } = await sandbox.exec("npm test", { timeoutMs: 600_000 });
 */
export class LocalSandboxProvider extends DirectoryProvider {
  readonly kind = "local";
  readonly isolated = false;

  constructor(options: LocalSandboxOptions = {}) {
    super(options);
  }

  protected check(spec: NormalSpec): void {
    spec.mounts.forEach((mount, i) => {
      if (mount.path !== mount.host) {
        throw new InvalidInputError(
          `spec.mounts[${i}]: the local provider binds nothing, so "${mount.host}" cannot appear at "${mount.path}": give path = host (the folder as it is), or use the bubblewrap provider`,
          [{ path: ["mounts", i], message: "local sandboxes cannot bind" }],
        );
      }
    });
  }

  protected async available(): Promise<void> {}

  protected open(record: LiveRecord): LocalSandbox {
    return new LocalSandbox(this.host, record);
  }
}

/** A sandbox of {@link LocalSandboxProvider}. */
export class LocalSandbox extends DirectorySandbox {
  constructor(host: SandboxHost, record: LiveRecord) {
    const { id, label, kind, createdAt, spec } = record;
    const info: SandboxInfo = {
      id,
      label,
      kind,
      isolated: false,
      network: true,
      mounts: spec.mounts,
      // Nothing enforces limits here: the info says so by listing none.
      limits: {},
      workspace: host.directory.workspace(id),
      createdAt,
    };
    super(host, record, info);
  }

  protected async prepare(argv: string[], cwd: string, env: Record<string, string>): Promise<CommandPlan> {
    const workspace = this.hostWorkspace;
    const [file, ...args] = argv as [string, ...string[]];
    return {
      file,
      args,
      cwd: cwd === "" ? workspace : `${workspace}/${cwd}`,
      env: { PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin", HOME: workspace, ...env },
    };
  }
}
