import { readFileSync } from "node:fs";
import type pg from "pg";
import type { Child } from "./child.ts";
import { fmt, median } from "./figures.ts";

/** Where the CPU went: the machine's, the server backends' of a database, and a batch's in each process. */

/** Jiffies the machine's CPUs spent busy and in all, from /proc/stat (Linux; zeros elsewhere). */
export function machineCpu(): { busy: number; total: number } {
  try {
    const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
    const total = fields.reduce((a, b) => a + b, 0);
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return { busy: 0, total: 0 };
  }
}

let serverAdmin: pg.Client | undefined;

/** The connection `serverCpu` finds a database's backends with (the main process's admin connection). */
export function useServerAdmin(admin: pg.Client): void {
  serverAdmin = admin;
}

/**
 * CPU time (ms) of the server processes serving a database: its backends' utime + stime from
 * /proc/<pid>/stat (the server runs on this machine; USER_HZ 100, so 10 ms a tick per process).
 */
export async function serverCpu(database: string): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (!serverAdmin) return out;
  const { rows } = await serverAdmin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1", [
    database,
  ]);
  for (const { pid } of rows) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.set(pid, (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // not on this machine, or gone
    }
  }
  return out;
}

/** Server CPU (ms) used between two snapshots; a backend that appeared in between counts whole. */
export function serverCpuSpent(before: Map<number, number>, after: Map<number, number>): number {
  let ms = 0;
  for (const [pid, t] of after) ms += t - (before.get(pid) ?? 0);
  return ms;
}

/** The database a connection string names. */
export const databaseOf = (url: string) => decodeURIComponent(new URL(url).pathname.slice(1));

/** Where a batch's CPU went: this process, its workers and the server's backends (ms), and how busy the machine was. */
export interface BatchCpu {
  self: number;
  workers: number;
  server: number;
  /** Busy share of all the machine's CPUs during the batch (every process on it, the server too). */
  busy: number;
}

/**
 * Runs `batch`, measuring the CPU it used in `client` (the process that starts the runs), in
 * `workers`, on the server and on the whole machine.
 */
export async function withCpu<T>(
  client: Child,
  workers: Child[],
  database: string,
  batch: () => Promise<T>,
): Promise<{ result: T; cpu: BatchCpu }> {
  const workersCpu = async () => (await Promise.all(workers.map((w) => w.cpu()))).reduce((a, b) => a + b, 0);
  const before = {
    server: await serverCpu(database),
    workers: await workersCpu(),
    self: await client.cpu(),
    machine: machineCpu(),
  };
  const result = await batch();
  const machine = machineCpu();
  const self = (await client.cpu()) - before.self;
  const cpu = {
    self,
    workers: (await workersCpu()) - before.workers,
    server: serverCpuSpent(before.server, await serverCpu(database)),
    busy: (machine.busy - before.machine.busy) / Math.max(1, machine.total - before.machine.total),
  };
  return { result, cpu };
}

/** The CPU of the median batches, as a cell. */
export function cpuCell(cpu: BatchCpu[], workers: boolean): string {
  const m = (pick: (c: BatchCpu) => number) => fmt(median(cpu.map(pick)));
  const node = workers ? `client ${m((c) => c.self)} + workers ${m((c) => c.workers)}` : `process ${m((c) => c.self)}`;
  return `${node}, server ${m((c) => c.server)} ms; machine ${Math.round(median(cpu.map((c) => c.busy)) * 100)} % busy`;
}
