import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { cpuSecondsOf } from "./dev-server.ts";
import { request } from "./http.ts";
import { RATE, SECONDS, START_BODY, wallNow } from "./options.ts";

/** The load: open loop, each request at its time on the schedule, whether or not the ones before it were answered. */

/** One start request of the load. */
export interface Start {
  /** ms the request left after its time on the schedule (the generator's own lateness). */
  lag: number;
  /** ms from sending the request to the end of its response. */
  latency: number;
  /** When it was sent, on the wall clock (as transitions' `at`). */
  sentAt: number;
  status: number;
  runId?: string;
  error?: string;
}

/** What the load did, and what it cost this process and the server. */
export interface Load {
  starts: Start[];
  maxInFlight: number;
  /** ms from the first request sent to the last. */
  sendMs: number;
  /** ms from the first request sent to the last answered. */
  loadMs: number;
  lastResponseAt: number;
  /** CPU seconds of the server, and of this process, during the load. */
  serverCpu: number;
  ownCpu: number;
  /** This process's event loop: its utilization and its delays. */
  elu: number;
  loopDelay: ReturnType<typeof monitorEventLoopDelay>;
}

/** Sends the load to `base` (the server's pid for its CPU time). */
export async function runLoad(base: string, pid: number | undefined): Promise<Load> {
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  const elu0 = performance.eventLoopUtilization();
  const serverCpu0 = cpuSecondsOf(pid);
  const ownCpu0 = process.cpuUsage();
  const { starts, maxInFlight, sendMs, loadMs } = await openLoop(base);
  const lastResponseAt = wallNow();
  const serverCpu = (cpuSecondsOf(pid) ?? Number.NaN) - (serverCpu0 ?? Number.NaN);
  const ownCpuUs = process.cpuUsage(ownCpu0);
  const ownCpu = (ownCpuUs.user + ownCpuUs.system) / 1e6;
  loopDelay.disable();
  const elu = performance.eventLoopUtilization(elu0).utilization;
  return { starts, maxInFlight, sendMs, loadMs, lastResponseAt, serverCpu, ownCpu, elu, loopDelay };
}

async function openLoop(base: string) {
  const total = Math.round(RATE * SECONDS);
  const starts: Start[] = [];
  const inFlight: Promise<void>[] = [];
  let maxInFlight = 0;
  let open = 0;
  const startOne = async (scheduled: number): Promise<void> => {
    const sent = performance.now();
    open++;
    maxInFlight = Math.max(maxInFlight, open);
    const start: Start = { lag: sent - scheduled, latency: Number.NaN, sentAt: wallNow(), status: 0 };
    starts.push(start);
    try {
      const res = await request(base, "POST", "/api/runs", START_BODY);
      start.latency = performance.now() - sent;
      start.status = res.status;
      if (res.status === 201) start.runId = (JSON.parse(res.body) as { run: { id: string } }).run.id;
      else start.error = `${res.status} ${res.body.slice(0, 200)}`;
    } catch (error) {
      start.latency = performance.now() - sent;
      start.error = String(error);
    } finally {
      open--;
    }
  };
  const tLoad = performance.now();
  let sendMs = 0;
  await new Promise<void>((resolve) => {
    let next = 0;
    const tick = () => {
      const now = performance.now();
      while (next < total && tLoad + (next * 1000) / RATE <= now) {
        inFlight.push(startOne(tLoad + (next * 1000) / RATE));
        next++;
      }
      if (next >= total) {
        sendMs = performance.now() - tLoad;
        resolve();
      } else setTimeout(tick, Math.max(0, tLoad + (next * 1000) / RATE - performance.now()));
    };
    tick();
  });
  await Promise.all(inFlight);
  const loadMs = performance.now() - tLoad;
  return { starts, maxInFlight, sendMs, loadMs };
}
