import { readdirSync, readFileSync } from "node:fs";

/** A unique `sleep` duration, so the test finds its processes by their command line. */
export function sleepMarker(): string {
  return `300.${Math.floor(Math.random() * 1e9)}`;
}

/** Host PIDs of the processes `sleep <marker>` (from the host's /proc, so inside sandboxes too). */
export function sleepPids(marker: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const args = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      if (args[0]?.endsWith("sleep") && args[1] === marker) pids.push(Number(name));
    } catch {
      // Ended meanwhile.
    }
  }
  return pids;
}

/** Waits until `check` holds (polling), or throws after `timeoutMs`. */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
