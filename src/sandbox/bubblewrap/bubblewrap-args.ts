import { lstat, readlink } from "node:fs/promises";
import { posix } from "node:path";
import type { SandboxLimits, SandboxMount } from "../../core/sandbox.ts";

/** Where the workspace appears inside a bubblewrap sandbox. */
export const WORKSPACE = "/workspace";

/** The PATH of every command (the spec's env may replace it). */
export const SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

/**
 * The host's folders a command needs to run programs, bound read-only: the system (`/usr`), its
 * compatibility links (`/bin`, `/lib`, … are links into /usr on a merged-/usr system, kept as
 * links) and `/etc` (users, DNS, certificates). Nothing else of the host is there: not /root,
 * /home, /var, /srv, the host's working folders or its /tmp.
 */
const SYSTEM = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"];

/** The bwrap arguments that lay out the system folders, as this host has them. */
export async function systemArgs(): Promise<string[]> {
  const args: string[] = [];
  for (const path of SYSTEM) {
    const stat = await lstat(path).catch(() => undefined);
    if (stat?.isSymbolicLink()) args.push("--symlink", await readlink(path), path);
    else if (stat?.isDirectory()) args.push("--ro-bind", path, path);
  }
  return args;
}

/** One command's sandbox, as bwrap arguments are made from it. */
export interface BwrapLayout {
  system: string[];
  network: boolean;
  /** The workspace's host folder. */
  workspace: string;
  mounts: Required<SandboxMount>[];
  /** The working folder, relative to the workspace. */
  cwd: string;
  limits: SandboxLimits;
  /** prlimit's path, when there are limits. */
  prlimit?: string;
}

/**
 * The arguments of `bwrap` for one command: its own user, PID, IPC, UTS, cgroup and (unless the
 * spec asks for the network) network namespaces; the system read-only, the workspace writable at
 * /workspace, a fresh /proc, /dev and /tmp; a new session (no terminal to push input into); killed
 * when its parent dies; and the limits set by `prlimit` between bwrap and the command.
 *
 * The environment is not on this command line (every host user can read a process's arguments):
 * bwrap is started with exactly the sandbox's environment, and passes it on.
 */
export function bwrapArgs(layout: BwrapLayout, argv: readonly string[]): string[] {
  const args = ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"];
  if (!layout.network) args.push("--unshare-net");
  args.push("--hostname", "sandbox", "--die-with-parent", "--new-session");
  args.push(...layout.system, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp");
  args.push("--bind", layout.workspace, WORKSPACE);
  for (const m of layout.mounts) args.push(m.readOnly ? "--ro-bind" : "--bind", m.host, m.path);
  args.push("--chdir", layout.cwd === "" ? WORKSPACE : posix.join(WORKSPACE, layout.cwd));
  args.push("--", ...limitArgs(layout), ...argv);
  return args;
}

/** `prlimit --cpu=… --as=… --nproc=… --fsize=… --` (hard and soft alike), or nothing. */
function limitArgs(layout: BwrapLayout): string[] {
  const { cpuSeconds, memoryBytes, processes, fileSizeBytes } = layout.limits;
  const flags: string[] = [];
  // SIGXCPU at the limit, SIGKILL a second later for a command that ignores it.
  if (cpuSeconds !== undefined) flags.push(`--cpu=${cpuSeconds}:${cpuSeconds + 1}`);
  if (memoryBytes !== undefined) flags.push(`--as=${memoryBytes}`);
  if (processes !== undefined) flags.push(`--nproc=${processes}`);
  if (fileSizeBytes !== undefined) flags.push(`--fsize=${fileSizeBytes}`);
  if (flags.length === 0 || layout.prlimit === undefined) return [];
  return [layout.prlimit, ...flags, "--"];
}
