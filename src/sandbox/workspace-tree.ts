import { execFile } from "node:child_process";
import { chmod, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { isCode } from "./sandbox-directory.ts";
import type { Owner } from "./workspace-files.ts";

const run = promisify(execFile);

/**
 * Removes a folder and everything in it, gone or not. A command may have left read-only folders
 * (`chmod 555`), which a non-root user cannot empty: those are made writable first.
 */
export async function removeTree(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
  } catch (error) {
    if (!isCode(error, "EACCES") && !isCode(error, "EPERM")) throw error;
    await makeWritable(dir);
    await rm(dir, { recursive: true, force: true });
  }
}

async function makeWritable(dir: string): Promise<void> {
  await chmod(dir, 0o700).catch(() => undefined);
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (entry.isDirectory()) await makeWritable(join(dir, entry.name));
  }
}

/**
 * Gives a folder and everything in it to `owner` (symbolic links themselves, never what they point
 * at: `chown -h`, so a link to /etc/passwd in a workspace stays harmless).
 */
export async function chownTree(dir: string, owner: Owner): Promise<void> {
  await run("chown", ["-R", "-h", `${owner.uid}:${owner.gid}`, dir]);
}
