/**
 * `cairn/sandbox`: the sandbox providers behind the `core/sandbox.ts` port (DESIGN §4,
 * *Sandboxes*): where the commands a run starts execute.
 * @example
 * import { LocalSandboxProvider } from "cairn/sandbox";
 * const sandboxes = new LocalSandboxProvider({ dir: ".cairn/sandboxes" });
 * const sandbox = await sandboxes.create("run-1/build");
 * const { exitCode, tail } = await sandbox.exec(["npm", "test"], { timeoutMs: 600_000 });
 * @module cairn/sandbox
 */
export type {
  ExecOptions,
  ExecResult,
  Sandbox,
  SandboxInfo,
  SandboxLimits,
  SandboxMount,
  SandboxProvider,
  SandboxSnapshot,
  SandboxSpec,
  SandboxStatus,
} from "./core/sandbox.ts";
export type {
  RuntimeSandboxOptions,
  SandboxExecOptions,
  SandboxExecResult,
  SandboxHandle,
} from "./core/sandbox-handle.ts";
export {
  type BubblewrapOptions,
  BubblewrapProvider,
  BubblewrapSandbox,
} from "./sandbox/bubblewrap/bubblewrap-provider.ts";
export { DirectoryProvider, type DirectoryProviderOptions } from "./sandbox/directory-provider.ts";
export { DirectorySandbox } from "./sandbox/directory-sandbox.ts";
export { LocalSandbox, type LocalSandboxOptions, LocalSandboxProvider } from "./sandbox/local/local-provider.ts";
export { DirectorySnapshotStore, type SnapshotStore } from "./sandbox/snapshot-store.ts";
