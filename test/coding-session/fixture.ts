import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Forge, startForge } from "../../examples/coding-session/forge.ts";
import { createRemote, demoFiles } from "../../examples/coding-session/git-remote.ts";
import { BubblewrapProvider, LocalSandboxProvider, type SandboxProvider } from "../../src/sandbox.ts";

/** Which provider the coding-session tests use: bubblewrap where it works, local otherwise. */
export async function sandboxKind(): Promise<"bubblewrap" | "local"> {
  if (process.env.CAIRN_SANDBOX === "local") return "local";
  const probe = mkdtempSync(join(tmpdir(), "cairn-cs-probe-"));
  chmodSync(probe, 0o711);
  try {
    return (await BubblewrapProvider.unavailable({ dir: join(probe, "sbx") })) === undefined ? "bubblewrap" : "local";
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

/** A provider of `kind` on `dir` (another call on the same dir is another process's view). */
export function provider(kind: "bubblewrap" | "local", dir: string): SandboxProvider {
  return kind === "bubblewrap" ? new BubblewrapProvider({ dir }) : new LocalSandboxProvider({ dir });
}

/** One session's world: a folder, its remote, its forge. */
export interface World {
  dir: string;
  remote: string;
  sandboxes: string;
  dataDir: string;
  baseSha: string;
  forge: Forge;
  close(): Promise<void>;
}

/**
 * A fresh folder (enterable by the user bubblewrap runs as), a remote holding the demo library
 * (its integration suite runs `slowTestSeconds`), and a forge on it.
 */
export async function makeWorld(root: string, name: string, options: { slowTestSeconds?: number } = {}) {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o711);
  const remote = join(dir, "remote.git");
  const baseSha = await createRemote(remote, demoFiles(options));
  const forge = await startForge({ repo: remote });
  return {
    dir,
    remote,
    sandboxes: join(dir, "sandboxes"),
    dataDir: join(dir, "data"),
    baseSha,
    forge,
    close: () => forge.close(),
  } satisfies World;
}

/** A test root folder, enterable by bubblewrap's user. */
export function makeRoot(prefix: string): string {
  const root = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(root, 0o711);
  return root;
}

export {
  commandPids,
  deleteBehindItsBack,
  freezeBehindItsBack,
  processesUnder,
  sandboxPids,
} from "../../examples/coding-session/delete-sandbox.ts";
