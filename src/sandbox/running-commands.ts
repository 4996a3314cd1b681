import { mkdir, readdir, readFile, rm, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { isCode } from "./sandbox-directory.ts";

/**
 * The commands running in a sandbox, kept on disk (`<procs>/<pid>`, holding the process's start
 * time) so that a destroy from any process (a sweep, a new worker after a crash) kills them.
 * Every command is the leader of its own process group; killing the group kills its tree (and
 * for bubblewrap, the sandbox's PID namespace with it: `--die-with-parent`).
 *
 * The start time guards against a reused PID: a group is killed only when its leader is still
 * the process recorded (`/proc/<pid>/stat`; where there is no /proc it is the PID alone).
 */
export class RunningCommands {
  readonly #dir: string;
  #made: Promise<void> | undefined;

  constructor(dir: string) {
    this.#dir = dir;
  }

  async add(pid: number): Promise<void> {
    this.#made ??= mkdir(this.#dir, { recursive: true, mode: 0o700 }).then(
      () => undefined,
      (error) => {
        this.#made = undefined;
        throw error;
      },
    );
    await this.#made;
    await writeFile(join(this.#dir, String(pid)), await startTime(pid));
  }

  async remove(pid: number): Promise<void> {
    await unlink(join(this.#dir, String(pid))).catch((error) => {
      if (!isCode(error, "ENOENT")) throw error;
    });
  }

  /** Kills every recorded command's process group (SIGKILL); returns how many it killed. */
  async killAll(): Promise<number> {
    let names: string[];
    try {
      names = await readdir(this.#dir);
    } catch (error) {
      if (isCode(error, "ENOENT")) return 0;
      throw error;
    }
    let killed = 0;
    for (const name of names) {
      const pid = Number(name);
      const recorded = await readFile(join(this.#dir, name), "utf8").catch(() => undefined);
      if (Number.isSafeInteger(pid) && pid > 1 && recorded !== undefined && recorded === (await startTime(pid))) {
        if (killGroup(pid)) killed++;
      }
      await this.remove(pid);
    }
    return killed;
  }

  /** Forgets the folder (after a destroy). */
  async clear(): Promise<void> {
    await rm(this.#dir, { recursive: true, force: true });
  }
}

/** SIGKILL to a process group; false when it is gone already. */
export function killGroup(pid: number): boolean {
  try {
    process.kill(-pid, "SIGKILL");
    return true;
  } catch (error) {
    if (isCode(error, "ESRCH")) return false;
    throw error;
  }
}

/** The process's start time in clock ticks after boot (field 22 of /proc/<pid>/stat), "" without /proc. */
async function startTime(pid: number): Promise<string> {
  if (process.platform !== "linux") return "";
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? "";
  } catch {
    return "gone";
  }
}
