import type { SandboxSpec } from "../../src/sandbox.ts";

/**
 * The sandbox side of the coding session: the spec of its sandbox and the shell scripts that
 * prepare, rebuild and checkpoint the workspace. Every script runs in the sandbox as one `exec`
 * step; none needs the network or a credential.
 */

/** What the session needs of its sandbox handle (`ctx.sandbox`'s handle has it). */
export interface WorkspaceHandle {
  exec(
    command: string,
    options?: {
      cwd?: string;
      stdin?: string;
      timeoutMs?: number;
      heartbeatTimeoutMs?: number;
      retry?: { maximumAttempts?: number; initialIntervalMs?: number };
    },
  ): Promise<{ exitCode: number | null; signal: string | null; tail: string }>;
  readFile(path: string): Promise<string>;
  writeFile(path: string, data: string): Promise<void>;
  /** Snapshots the sandbox and deletes it; the next call restores it from that snapshot. */
  release(): Promise<unknown>;
  destroy(): Promise<void>;
}

/** Where the repository is, relative to the workspace. */
export const REPO = "repo";

/** Who commits in the sandbox. */
const IDENTITY = { name: "Cairn coding session", email: "agent@cairn.invalid" };

/**
 * The sandbox of a session: no network; the remote bound read-only (commands clone from it but
 * cannot write it); the outbox bound writable (the only way out for commits, as bundles); an
 * environment of git's settings and nothing else — no model key, no forge token. Mounts appear at
 * their host paths, which both the bubblewrap and the local provider accept.
 */
export function sessionSandboxSpec(paths: { remote: string; outbox: string }): SandboxSpec {
  return {
    network: false,
    env: {
      GIT_AUTHOR_NAME: IDENTITY.name,
      GIT_AUTHOR_EMAIL: IDENTITY.email,
      GIT_COMMITTER_NAME: IDENTITY.name,
      GIT_COMMITTER_EMAIL: IDENTITY.email,
      // The remote belongs to the host's user, the sandbox runs as another: let git read it.
      GIT_CONFIG_COUNT: "1",
      GIT_CONFIG_KEY_0: "safe.directory",
      GIT_CONFIG_VALUE_0: "*",
    },
    // CPU seconds and file size bind each command; no address-space limit (node reserves a lot)
    // and no process limit (an rlimit per user would count the host's other sandboxes too).
    limits: { cpuSeconds: 600, fileSizeBytes: 256 * 1024 * 1024 },
    mounts: [
      { host: paths.remote, path: paths.remote, readOnly: true },
      { host: paths.outbox, path: paths.outbox, readOnly: false },
    ],
  };
}

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** Clones the remote's `base`, makes `branch`, runs the setup script. Safe to run again. */
export function prepareScript(o: { remote: string; base: string; branch: string }): string {
  return [
    "set -e",
    `rm -rf ${REPO}`,
    `git clone --quiet --no-hardlinks --branch ${quote(o.base)} ${quote(o.remote)} ${REPO}`,
    `cd ${REPO}`,
    `git checkout --quiet -B ${quote(o.branch)}`,
    "sh setup.sh",
  ].join("\n");
}

/**
 * Rebuilds the workspace from the last pushed commit: a fresh clone of the remote, `branch` at
 * `sha`, the setup script again. Safe to run again.
 */
export function rebuildScript(o: { remote: string; branch: string; sha: string }): string {
  return [
    "set -e",
    `rm -rf ${REPO}`,
    `git clone --quiet --no-hardlinks ${quote(o.remote)} ${REPO}`,
    `cd ${REPO}`,
    `git checkout --quiet -B ${quote(o.branch)} ${quote(o.sha)}`,
    "sh setup.sh",
  ].join("\n");
}

/**
 * Commits every change (the message on standard input) and, when there is a new commit, writes the
 * commits after `last` (the last pushed one) as a bundle into the outbox. Prints `checkpoint <sha>`
 * last. Run again after it ran, it commits nothing more and writes the same bundle.
 */
export function commitScript(o: { branch: string; last: string; outbox: string }): string {
  return [
    "set -e",
    "git add -A",
    "git diff --cached --quiet || git commit --quiet --file -",
    "sha=$(git rev-parse HEAD)",
    `if [ "$sha" != ${quote(o.last)} ]; then`,
    `  git bundle create -q ${quote(o.outbox)}/$sha.bundle ${quote(o.branch)} ^${quote(o.last)}`,
    "fi",
    'echo "checkpoint $sha"',
  ].join("\n");
}

/** The commit a {@link commitScript} reported, from its output's last lines. */
export function checkpointSha(tail: string): string {
  const found = /checkpoint ([0-9a-f]{40})\s*$/.exec(tail);
  if (!found?.[1]) throw new Error(`the checkpoint script did not report a commit; its output ended:\n${tail}`);
  return found[1];
}
