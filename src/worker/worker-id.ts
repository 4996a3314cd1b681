import { randomBytes } from "node:crypto";
import { hostname } from "node:os";

/**
 * Worker ids name the host and process that hold a lease (`host:pid:nonce`), so an operator can
 * tell which machine lost a run, and a worker on the same host can see that a lease's owner
 * process is gone without waiting for the lease to lapse.
 */
export function newWorkerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
}

/**
 * True when `owner` is a worker of another process on this host that no longer exists. Only a
 * definite answer counts: a process we may not signal (EPERM) is alive.
 */
export function isDeadLocalOwner(owner: string): boolean {
  const parts = owner.split(":");
  if (parts.length < 3) return false;
  const pid = Number(parts[parts.length - 2]);
  const host = parts.slice(0, -2).join(":");
  if (host !== hostname() || !Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}
