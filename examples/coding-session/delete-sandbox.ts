import { readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";

/**
 * The deletion experiment's deletion: a sandbox vanishing as a reclaimed machine would, behind
 * its provider's back. Its processes are found in the host's /proc, not through the provider.
 */

/** Every process of the host: its PID and its parent's. */
function processes(): { pid: number; ppid: number }[] {
  const all: { pid: number; ppid: number }[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The fields after the command's name, which may hold spaces and parentheses.
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      all.push({ pid: Number(name), ppid });
    } catch {
      // Ended meanwhile.
    }
  }
  return all;
}

/**
 * PIDs of the host's processes that belong to the sandbox whose host workspace is `workspace`:
 * those that name it (bubblewrap's command line) or run in it (a local command's folder), and every
 * process they started.
 */
export function sandboxPids(workspace: string): number[] {
  const found = new Set<number>();
  for (const { pid } of processes()) {
    if (pid === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if (cmdline.includes(workspace) || cwd === workspace || cwd.startsWith(`${workspace}/`)) found.add(pid);
    } catch {
      // Ended meanwhile, or not ours to read.
    }
  }
  const all = processes();
  for (let grew = true; grew; ) {
    grew = false;
    for (const { pid, ppid } of all) {
      if (found.has(ppid) && !found.has(pid)) {
        found.add(pid);
        grew = true;
      }
    }
  }
  return [...found];
}

/** The sandbox's processes but bubblewrap's own: the command and what it started. */
export function commandPids(workspace: string): number[] {
  return sandboxPids(workspace).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== "bwrap";
    } catch {
      return false;
    }
  });
}

/** PIDs of every process whose command line or folder is inside `dir` (a test's sandboxes folder). */
export const processesUnder = sandboxPids;

function signalAll(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

/**
 * Deletes a sandbox as a machine that is shut down: its processes killed (SIGKILL), its folder
 * removed. Returns the PIDs it killed.
 */
export function deleteBehindItsBack(workspace: string): number[] {
  const pids = sandboxPids(workspace);
  signalAll(pids, "SIGKILL");
  rmSync(workspace, { recursive: true, force: true });
  return pids;
}

/**
 * Deletes a sandbox as a machine that goes silent: its commands stopped (SIGSTOP: no exit, no
 * output, nothing that would end them), its folder removed. Only a missed heartbeat can tell.
 * bubblewrap's own processes are left running: a stopped bwrap that is the sandbox's PID 1 (a
 * session of its own) was once seen to outlive the kill of its command's group.
 */
export function freezeBehindItsBack(workspace: string): number[] {
  const pids = commandPids(workspace);
  signalAll(pids, "SIGSTOP");
  rmSync(workspace, { recursive: true, force: true });
  return pids;
}
