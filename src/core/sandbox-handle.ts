import type { RetryPolicy } from "./retry-policy.ts";
import type { SandboxInfo, SandboxProvider, SandboxSnapshot } from "./sandbox.ts";

/**
 * What a workflow holds of a sandbox (DESIGN §4, *Sandboxes*): `ctx.sandbox(name, spec?)` returns
 * it, and each of its calls is a step of kind `sandbox` named `<call>:<name>`, recorded in the
 * journal, replayed from it, governed like a tool (policies see kind `sandbox`). A call on a
 * sandbox that was lost restores it from the run's last `snapshot` of it first.
 */
export interface SandboxHandle {
  /** The name the workflow gave it: its label is `<runId>/<name>`. */
  readonly name: string;
  /** The sandbox as `ctx.sandbox` recorded it (id, kind, isolated, network, mounts, limits). */
  readonly info: SandboxInfo;
  /**
   * Runs a command (a shell line, or an argument vector) as a durable step: its start recorded
   * before it runs, its output streamed to the run's live events and written whole to a log file;
   * the journal keeps the exit code, the last lines and the log's path. A non-zero exit is a
   * result, not a failure.
   */
  exec(command: string | readonly string[], options?: SandboxExecOptions): Promise<SandboxExecResult>;
  /** A text file of the workspace (UTF-8), as the journal keeps it. */
  readFile(path: string): Promise<string>;
  /** Writes a text file of the workspace (its content is journaled as the step's argument). */
  writeFile(path: string, data: string): Promise<void>;
  /** Stores the workspace; a lost sandbox is restored from the run's last snapshot. */
  snapshot(): Promise<SandboxSnapshot>;
  /** Replaces the workspace by a snapshot's content. */
  restore(snapshot: string): Promise<void>;
  /**
   * Snapshots the sandbox and destroys it, so a paused run holds none; the next call restores it
   * from that snapshot.
   */
  release(): Promise<SandboxSnapshot>;
  /** Destroys it; a later call fails with `SandboxLostError` until `ctx.sandbox(name)` makes it again. */
  destroy(): Promise<void>;
}

/** Options of {@link SandboxHandle.exec}. */
export interface SandboxExecOptions {
  /**
   * Start-to-close limit of each attempt: past it the attempt fails (`StepTimeoutError`) and the
   * command's whole process tree is killed. @default none
   */
  timeoutMs?: number;
  /**
   * An attempt that gets neither output nor a live answer from its sandbox for this long fails as
   * a lost sandbox (`SandboxLostError`): the next attempt restores it. @default 30000
   */
  heartbeatTimeoutMs?: number;
  /** Variables over the sandbox's environment for this command (journaled: no secrets here). */
  env?: Record<string, string>;
  /** Working directory, relative to the workspace. @default the workspace */
  cwd?: string;
  /** Text written to the command's standard input. @default none */
  stdin?: string;
  /** Retries of a failed attempt (a lost sandbox, a timeout). @default the tool defaults */
  retry?: RetryPolicy;
}

/** What the journal keeps of a command (its step's result). */
export interface SandboxExecResult {
  /** The exit code, or null when a signal ended it. */
  exitCode: number | null;
  signal: string | null;
  /** The last lines of output (both streams), at most 4 KiB. */
  tail: string;
  /** Bytes of output in all. */
  outputBytes: number;
  /** The whole output, on the host running the worker (`<logDir>/<runId>/<seq>.<attempt>.log`). */
  logPath: string | null;
  durationMs: number;
}

/** The runtime's `sandbox` option: where `ctx.sandbox` makes sandboxes. */
export interface RuntimeSandboxOptions {
  /** The provider of the run's sandboxes (`cairn/sandbox`: `BubblewrapProvider`, `LocalSandboxProvider`). */
  provider: SandboxProvider;
  /** Where each command's whole output is written. @default ".cairn/sandbox-logs" */
  logDir?: string;
}
