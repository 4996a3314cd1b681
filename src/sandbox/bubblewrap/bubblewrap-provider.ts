import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { promisify } from "node:util";
import { SandboxUnavailableError } from "../../core/errors.ts";
import type { SandboxInfo } from "../../core/sandbox.ts";
import type { CommandPlan } from "../command-runner.ts";
import { DirectoryProvider, type DirectoryProviderOptions } from "../directory-provider.ts";
import { DirectorySandbox, type LiveRecord, type SandboxHost } from "../directory-sandbox.ts";
import type { NormalSpec } from "../sandbox-spec.ts";
import type { Owner } from "../workspace-files.ts";
import { type BwrapLayout, bwrapArgs, SANDBOX_PATH, systemArgs, WORKSPACE } from "./bubblewrap-args.ts";

const run = promisify(execFile);

/** Options of {@link BubblewrapProvider}. */
export interface BubblewrapOptions extends DirectoryProviderOptions {
  /** The bubblewrap program. @default "bwrap" */
  bwrap?: string;
  /**
   * The host user and group commands run as when Cairn runs as root: root's own files (its /etc,
   * its home) stay out of reach, and the process limit counts a user that is not root (the kernel
   * does not hold root to it). Ignored when Cairn is not root: commands run as Cairn's user.
   * @default { uid: 65534, gid: 65534 } (nobody)
   */
  user?: Owner;
}

/** What the provider found about this machine, once. */
interface Machine {
  system: string[];
  prlimit: string | undefined;
}

/**
 * Sandboxes in Linux namespaces, through bubblewrap (`bwrap`; Debian's `bubblewrap`). Each command
 * runs in its own user, PID, IPC, UTS and network namespaces (the network is off unless the spec
 * turns it on: only a loopback of its own), sees the host's system read-only (`/usr`, `/etc`, the
 * `/bin` and `/lib` links) and nothing else of it but its workspace (writable, at `/workspace`) and
 * the spec's mounts, has a fresh `/tmp` (a tmpfs, gone when the command ends), holds no
 * capabilities, and gets only the spec's and the call's environment (with `PATH` and
 * `HOME=/workspace`).
 *
 * Limits are rlimits set by `prlimit` (util-linux) between bwrap and the command, so they bind the
 * command and every process it starts, and a command cannot raise them (it holds no capability in
 * the host's user namespace). A timeout, an abort or a destroy kills bwrap's process group; bwrap's
 * `--die-with-parent` then kills the sandbox's PID 1, and with it every process of the namespace,
 * whatever process group or session they moved to. A command's processes end when it ends.
 *
 * @example
 * import { BubblewrapProvider } from "cairn/sandbox";
 * const sandboxes = new BubblewrapProvider({ dir: ".cairn/sandboxes" });
 * const sandbox = await sandboxes.create("run-1/build", { limits: { memoryBytes: 2 ** 31 } });
 * const { exitCode, tail } = await sandbox.exec("make test", { timeoutMs: 600_000 });
 */
export class BubblewrapProvider extends DirectoryProvider {
  readonly kind = "bubblewrap";
  readonly isolated = true;
  readonly #bwrap: string;
  readonly #user: Owner | undefined;
  #machine: Promise<Machine> | undefined;

  constructor(options: BubblewrapOptions = {}) {
    const user = process.getuid?.() === 0 ? (options.user ?? { uid: 65534, gid: 65534 }) : undefined;
    super(options, user);
    this.#bwrap = options.bwrap ?? "bwrap";
    this.#user = user;
  }

  /**
   * Why bubblewrap cannot run sandboxes on this machine (not installed, namespaces refused), or
   * undefined when it can: for a caller that falls back to another provider, or a test that skips.
   * It runs `true` in a sandbox that binds the sandboxes folder (`options.dir`, which it creates).
   */
  static async unavailable(options: BubblewrapOptions = {}): Promise<string | undefined> {
    try {
      await new BubblewrapProvider(options).available();
      return undefined;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  protected check(): void {}

  /** Finds the system folders and prlimit, and runs `true` in a sandbox (once, until it works). */
  protected async available(spec?: NormalSpec): Promise<void> {
    const machine = await this.#found();
    if (spec && Object.keys(spec.limits).length > 0 && machine.prlimit === undefined) {
      throw new SandboxUnavailableError(
        "the spec sets limits, which bubblewrap sandboxes apply with prlimit: install util-linux (/usr/bin/prlimit)",
      );
    }
  }

  #found(): Promise<Machine> {
    this.#machine ??= this.#probe().catch((error) => {
      this.#machine = undefined;
      throw error;
    });
    return this.#machine;
  }

  async #probe(): Promise<Machine> {
    const system = await systemArgs();
    const { root } = this.host.directory;
    await this.host.directory.ready();
    const args = ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net"];
    args.push("--die-with-parent", ...system, "--proc", "/proc", "--dev", "/dev", "--ro-bind", root, "/mnt");
    try {
      await run(this.#bwrap, [...args, "--", "true"], { cwd: "/", env: { PATH: SANDBOX_PATH }, ...(this.#user ?? {}) });
    } catch (error) {
      throw new SandboxUnavailableError(this.#why(error), { cause: error });
    }
    const prlimit = await access("/usr/bin/prlimit", constants.X_OK).then(
      () => "/usr/bin/prlimit",
      () => undefined,
    );
    return { system, prlimit };
  }

  #why(error: unknown): string {
    const { code, stderr } = error as { code?: unknown; stderr?: string };
    if (code === "ENOENT") {
      return `bubblewrap is not installed ("${this.#bwrap}" not found): apt-get install bubblewrap (Debian, Ubuntu), or use LocalSandboxProvider, which isolates nothing`;
    }
    const said = String(stderr ?? error).trim();
    if (this.#user && /Permission denied/.test(said)) {
      return `bubblewrap runs as uid ${this.#user.uid} (Cairn runs as root), which cannot reach the sandboxes folder ${this.host.directory.root} (${said}): give a dir every user may enter (e.g. /var/lib/cairn/sandboxes), or run Cairn as a user that is not root`;
    }
    return `bubblewrap cannot create a sandbox here: ${said} (user namespaces may be disabled: sysctl kernel.unprivileged_userns_clone=1, or the container forbids them)`;
  }

  protected open(record: LiveRecord): BubblewrapSandbox {
    return new BubblewrapSandbox(this.host, record, async () => {
      await this.available(record.spec);
      return { bwrap: this.#bwrap, user: this.#user, ...(await this.#found()) };
    });
  }
}

/** What a bubblewrap sandbox needs of its provider to start a command. */
interface Launcher extends Machine {
  bwrap: string;
  user: Owner | undefined;
}

/** A sandbox of {@link BubblewrapProvider}. */
export class BubblewrapSandbox extends DirectorySandbox {
  readonly #launcher: () => Promise<Launcher>;

  constructor(host: SandboxHost, record: LiveRecord, launcher: () => Promise<Launcher>) {
    const { id, label, kind, createdAt, spec } = record;
    const info: SandboxInfo = {
      id,
      label,
      kind,
      isolated: true,
      network: spec.network,
      mounts: spec.mounts,
      limits: spec.limits,
      workspace: WORKSPACE,
      createdAt,
    };
    super(host, record, info);
    this.#launcher = launcher;
  }

  protected async prepare(argv: string[], cwd: string, env: Record<string, string>): Promise<CommandPlan> {
    const launcher = await this.#launcher();
    const spec: NormalSpec = this.record.spec;
    const layout: BwrapLayout = {
      system: launcher.system,
      network: spec.network,
      workspace: this.hostWorkspace,
      mounts: spec.mounts,
      cwd,
      limits: spec.limits,
      ...(launcher.prlimit === undefined ? {} : { prlimit: launcher.prlimit }),
    };
    return {
      file: launcher.bwrap,
      args: bwrapArgs(layout, argv),
      cwd: "/",
      env: { PATH: SANDBOX_PATH, HOME: WORKSPACE, ...env },
      ...(launcher.user ?? {}),
    };
  }
}
