/**
 * The sandbox port (DESIGN §4, *Sandboxes*): where the commands a run starts execute. Core does no
 * I/O: it speaks to sandboxes through these types, and a provider (`cairn/sandbox`: bubblewrap,
 * local; or a container, microVM or hosted service of the user's) fills them.
 *
 * A sandbox is found by its **label** (the run's id and the name the workflow gave it), so creating
 * it again after a retry or a crash finds the one the first attempt made. It has a **workspace**, a
 * directory its commands may write (the rest of the file system is read-only or absent), no network
 * unless asked, the limits of its spec, and an environment of only what the spec passes.
 *
 * For an implementer (a container, microVM or hosted provider fits as well as bubblewrap):
 * - **Create by label, idempotently.** `create(label)` returns the live sandbox that holds the label
 *   or makes one, also when two processes ask at once; a lost one is destroyed and replaced. A
 *   hosted service keeps the label as its own label or metadata, and `find` is its list-by-label.
 * - **Content-addressed snapshots.** `snapshot()` returns an id that names the workspace's content
 *   (the same content, the same id, stored once) and that `restore` takes in any sandbox of the
 *   provider, a new one with the same label included: that is how a lost sandbox comes back.
 * - **Streamed output.** `exec` hands each piece of output to `onOutput` as it arrives and to the
 *   log file, keeps only a tail for its result, and kills the command's whole process tree (not
 *   just its first process) on timeout, abort and destroy.
 */

/** What a sandbox is asked to be. */
export interface SandboxSpec {
  /** Outbound network from commands. @default false */
  network?: boolean;
  /** The environment of every command: nothing of the host's is passed but these. @default {} */
  env?: Readonly<Record<string, string>>;
  /** Resource limits of every command. @default none beyond the provider's */
  limits?: SandboxLimits;
  /** Host directories bound into the sandbox. @default none */
  mounts?: readonly SandboxMount[];
}

/** Resource limits of a command (each process of it, as rlimits where the provider uses them). */
export interface SandboxLimits {
  /** CPU seconds. */
  cpuSeconds?: number;
  /** Address space, bytes. */
  memoryBytes?: number;
  /** Processes (and threads) the sandbox's user may run at once. */
  processes?: number;
  /** Largest file a command may write, bytes. */
  fileSizeBytes?: number;
}

/** A host directory bound into the sandbox at `path`. */
export interface SandboxMount {
  host: string;
  path: string;
  /** @default true */
  readOnly?: boolean;
}

/** What a sandbox is, as recorded on the run (its step's result) and in its contract. */
export interface SandboxInfo {
  /** The provider's id of this sandbox. */
  id: string;
  label: string;
  /** The provider's kind: "bubblewrap", "local", … */
  kind: string;
  /** False for a provider that isolates nothing (`local`): said loudly wherever the sandbox is shown. */
  isolated: boolean;
  network: boolean;
  mounts: SandboxMount[];
  limits: SandboxLimits;
  /** The workspace's path as commands see it. */
  workspace: string;
  createdAt: number;
}

/** How a command is run. */
export interface ExecOptions {
  /** Working directory, relative to the workspace. @default the workspace */
  cwd?: string;
  /** Variables over the sandbox's environment for this command. */
  env?: Readonly<Record<string, string>>;
  /** Text written to the command's standard input, then closed. @default none */
  stdin?: string;
  /** Wall-clock limit: past it the command's whole process tree is killed. @default none */
  timeoutMs?: number;
  /** Fired: the command's whole process tree is killed (a cancel, a lost lease, a step timeout). */
  signal?: AbortSignal;
  /**
   * Each piece of output as it arrives, in order within its stream, as text (a character is never
   * split across pieces). A listener that throws loses nothing but its own piece.
   */
  onOutput?: (chunk: { stream: "stdout" | "stderr"; text: string }) => void;
  /** A host file that receives the whole output (both streams, as they arrive). */
  logPath?: string;
}

/** How a command ended. */
export interface ExecResult {
  /**
   * The exit code, or null when a signal ended it. Where the command runs under a supervisor
   * (bubblewrap), a signal inside shows as the supervisor reports it: 128 + the signal's number.
   */
  exitCode: number | null;
  /** The signal that ended it (`SIGKILL` after a timeout, an abort or a destroy), or null. */
  signal: string | null;
  /** Killed for running past `timeoutMs`. */
  timedOut: boolean;
  /** Killed because `signal` fired. */
  aborted: boolean;
  /** The last lines of output (both streams), at most a few kilobytes. */
  tail: string;
  /** Bytes of output in all. */
  outputBytes: number;
  durationMs: number;
}

/** A stored copy of a sandbox's workspace, content-addressed. */
export interface SandboxSnapshot {
  /** `sha256:<hex>` of the archive (a hosted provider: its own id, stable for one content). */
  id: string;
  bytes: number;
}

/** The liveness of a sandbox: `lost` when its workspace or its processes are gone without a destroy. */
export type SandboxStatus = "live" | "lost" | "destroyed";

/** One sandbox, as its provider hands it out. */
export interface Sandbox {
  readonly info: SandboxInfo;
  /**
   * Runs a command (a shell line run by `/bin/sh -c`, or an argument vector) in the workspace. A
   * non-zero exit, a timeout and an abort are results; a sandbox that is lost or destroyed rejects
   * with `SandboxLostError`.
   */
  exec(command: string | readonly string[], options?: ExecOptions): Promise<ExecResult>;
  /** A file of the workspace (a path inside it; `..` out of it is refused). */
  readFile(path: string): Promise<Uint8Array>;
  writeFile(path: string, data: string | Uint8Array): Promise<void>;
  /** Stores the workspace and returns its id; storing the same content twice stores it once. */
  snapshot(): Promise<SandboxSnapshot>;
  /** Replaces the workspace by a snapshot's content (a lost sandbox is live again after it). */
  restore(snapshot: string): Promise<void>;
  status(): Promise<SandboxStatus>;
  /** Kills its processes and removes it; destroying a destroyed sandbox does nothing. */
  destroy(): Promise<void>;
}

/**
 * A kind of sandbox: the port a provider fills. `create` is idempotent by label (it returns the
 * live sandbox that has the label, or makes one), so a retry or a new worker after a crash finds
 * the sandbox the first attempt made.
 */
export interface SandboxProvider {
  readonly kind: string;
  /** Whether its sandboxes isolate anything (false: `local`). */
  readonly isolated: boolean;
  /**
   * The live sandbox holding `label`, or a new one. A lost one is destroyed and replaced (the caller
   * restores its snapshot). A label held with another network, limits or mounts is refused
   * (`InvalidInputError`); a new env replaces the old.
   */
  create(label: string, spec: SandboxSpec): Promise<Sandbox>;
  /** The live (or lost) sandbox with this label, if any. */
  find(label: string): Promise<Sandbox | undefined>;
  /** Every sandbox it holds, live or lost. */
  list(): Promise<SandboxInfo[]>;
}
