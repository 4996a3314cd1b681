import { readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";

/**
 * The deletion experiment's deletion: a sandbox vanishing as a reclaimed machine would, behind
 * its provider's back. Its processes are found in the host's /proc, not through the provider.
 */

/** PIDs of the host's processes that belong to the sandbox whose host workspace is `workspace`. */
export function sandboxPids(workspace: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      // bubblewrap: the workspace is on bwrap's command line; local: the command's folder is in it.
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8");
      const cwd = readlinkSync(`/proc/${name}/cwd`);
      if (cmdline.includes(workspace) || cwd === workspace || cwd.startsWith(`${workspace}/`)) pids.push(Number(name));
    } catch {
      // Ended meanwhile, or not ours to read.
    }
  }
  return pids;
}

/** PIDs of every process whose command line or folder is inside `dir` (a test's sandboxes folder). */
export const processesUnder = sandboxPids;

/**
 * Deletes a sandbox behind its provider's back, as a reclaimed machine would vanish: kills its
 * processes (SIGKILL, by PID from /proc, not through the provider) and removes its folder.
 */
export function deleteBehindItsBack(workspace: string): number[] {
  const pids = sandboxPids(workspace);
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  rmSync(workspace, { recursive: true, force: true });
  return pids;
}
