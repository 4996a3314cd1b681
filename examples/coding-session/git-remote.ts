/**
 * The session's git remote, on the host side: a bare repository that plays GitHub's part. The
 * sandbox reads it through a read-only mount (it clones from it) and never writes it: a command in
 * the sandbox could otherwise rewrite other branches or plant hooks that the host would run. Its
 * commits leave the sandbox as a git bundle in a one-way outbox folder, and the harness (outside)
 * fetches the session's branch from that bundle into the remote, fast-forward only.
 */
import { execFile } from "node:child_process";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Runs git on the host; its standard output, trimmed. */
export async function git(args: readonly string[], cwd?: string): Promise<string> {
  const { stdout } = await run("git", args, { ...(cwd ? { cwd } : {}), maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}

/** The commit `branch` points at in the bare repository `repo`, or undefined when it has none. */
export async function branchSha(repo: string, branch: string): Promise<string | undefined> {
  try {
    return await git(["--git-dir", repo, "rev-parse", "--verify", "--quiet", `refs/heads/${branch}^{commit}`]);
  } catch {
    return undefined;
  }
}

/**
 * Takes `branch` from a bundle the sandbox wrote into the remote: checks the bundle, fetches the
 * branch fast-forward only (a bundle cannot move the branch anywhere but forward, nor touch another
 * one), and checks that it now points at `sha`. Fetching the same bundle again changes nothing.
 */
export async function acceptBundle(repo: string, bundle: string, branch: string, sha: string): Promise<void> {
  if (!/^[0-9a-f]{40}$/.test(sha)) throw new Error(`"${sha}" is not a commit id`);
  if ((await branchSha(repo, branch)) === sha) return;
  await git(["--git-dir", repo, "bundle", "verify", "--quiet", bundle]);
  await git(["--git-dir", repo, "fetch", "--quiet", "--no-tags", bundle, `refs/heads/${branch}:refs/heads/${branch}`]);
  const now = await branchSha(repo, branch);
  if (now !== sha) throw new Error(`the bundle moved ${branch} to ${now}, not to the checkpoint's ${sha}`);
}

/** What the demo repository holds: a small JavaScript library with tests and a setup script. */
export function demoFiles(options: { slowTestSeconds?: number } = {}): Record<string, string> {
  const slow = options.slowTestSeconds ?? 0;
  return {
    "README.md": "# text-utils\n\nSmall string helpers. `sh setup.sh` once, then `sh test.sh`.\n",
    "package.json": `${JSON.stringify({ name: "text-utils", type: "module", private: true }, null, 2)}\n`,
    ".gitignore": ".setup/\n",
    "setup.sh": [
      "#!/bin/sh",
      "# Prepares a fresh checkout. The sandbox has no network: nothing is downloaded, the tools are the image's.",
      "set -e",
      "mkdir -p .setup",
      "node --version > .setup/node-version",
      'echo "setup: node $(cat .setup/node-version)"',
      "",
    ].join("\n"),
    "test.sh": [
      "#!/bin/sh",
      "# The unit tests, then the slower integration suite (it reports progress as it goes).",
      "set -e",
      "node --test test/",
      "i=0",
      `while [ $i -lt ${slow * 5} ]; do echo "integration: step $i"; sleep 0.2; i=$((i + 1)); done`,
      'echo "all tests passed"',
      "",
    ].join("\n"),
    "src/slugify.js": [
      "/** Lower-case words joined by hyphens. */",
      "export function slugify(text) {",
      '  return text.toLowerCase().trim().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");',
      "}",
      "",
    ].join("\n"),
    "test/slugify.test.js": [
      'import assert from "node:assert/strict";',
      'import { test } from "node:test";',
      'import { slugify } from "../src/slugify.js";',
      "",
      'test("slugify", () => assert.equal(slugify(" Hello, World! "), "hello-world"));',
      "",
    ].join("\n"),
  };
}

/**
 * Makes the bare repository `repo` with one commit of `files` on `main` (for the demo and the
 * tests), readable by every user (a sandbox started unprivileged clones it through a mount).
 */
export async function createRemote(repo: string, files: Record<string, string> = demoFiles()): Promise<string> {
  await mkdir(dirname(repo), { recursive: true });
  await git(["init", "--quiet", "--bare", "--initial-branch", "main", repo]);
  const work = await mkdtemp(join(tmpdir(), "cairn-seed-"));
  try {
    await git(["init", "--quiet", "--initial-branch", "main"], work);
    for (const [path, text] of Object.entries(files)) {
      await mkdir(dirname(join(work, path)), { recursive: true });
      await writeFile(join(work, path), text);
    }
    const who = ["-c", "user.name=Cairn demo", "-c", "user.email=demo@cairn.invalid"];
    await git(["add", "-A"], work);
    await git([...who, "commit", "--quiet", "-m", "text-utils: slugify"], work);
    await git(["push", "--quiet", repo, "main"], work);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  await run("chmod", ["-R", "a+rX", repo]);
  await chmod(dirname(repo), 0o755).catch(() => undefined);
  return (await branchSha(repo, "main")) as string;
}
