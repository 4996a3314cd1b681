import { DEFAULT_WORKER_CONCURRENCY } from "cairn";
import type { DbosPeer } from "../peers/postgres-peer-types.ts";
import { fmt, mean, printTable, quantile } from "./figures.ts";
import type { PeerUrls } from "./peers.ts";
import type { Settings } from "./settings.ts";
import { cairnSignalLatency, dbosSignalLatency } from "./signal-latency.ts";

/** What the main process has opened that its end must close: DBOS, once section 3 opens it here. */
export interface OpenPeers {
  peers?: { dbos: DbosPeer; dbosUrl: string };
}

/** 3. Signal latency across processes (see bench/postgres.ts); DBOS is opened into `open`. */
export async function signalSection(
  { SIGNALS, SIGNAL_WARM_UP, SIGNAL_GAP }: Settings,
  cairnUrl: string,
  peerUrls: PeerUrls | undefined,
  open: OpenPeers,
): Promise<void> {
  // 3. Signals --------------------------------------------------------------------------------
  process.stderr.write("3. signals\n");
  // DBOS in this process now (its workflows wait in DBOS.recv here), once its measuring processes
  // are gone: two DBOS runtimes on one system database would recover each other's workflows.
  if (peerUrls) open.peers = { dbos: await peerUrls.load.openDbos(peerUrls.dbosUrl), dbosUrl: peerUrls.dbosUrl };
  const { peers } = open;
  console.log(
    `3. Signal latency across processes: ${SIGNALS} runs parked, signalled one at a time (after ${SIGNAL_WARM_UP} not measured),` +
      ` back-to-back and after the worker sat idle ${SIGNAL_GAP} ms`,
  );
  const lines: string[][] = [];
  const latencyRow = (name: string, ms: number[]) => {
    const s = [...ms].sort((a, b) => a - b);
    lines.push([name, fmt(mean(s)), ...[0.5, 0.9, 0.99, 1].map((q) => fmt(quantile(s, q)))]);
  };
  let idleRunning: number[] = [];
  const offsets: string[] = [];
  for (const gap of [0, SIGNAL_GAP]) {
    const how = gap === 0 ? "back-to-back" : `idle ${gap} ms`;
    const cairn = await cairnSignalLatency(
      cairnUrl,
      gap === 0 ? "signal" : "signal_idle",
      SIGNALS,
      SIGNAL_WARM_UP,
      gap,
    );
    if (gap > 0) idleRunning = cairn.running;
    latencyRow(`cairn, ${how}: RUNNING recorded by the worker process`, cairn.running);
    latencyRow(`cairn, ${how}: workflow code past ctx.waitForSignal`, cairn.resumed);
    latencyRow(`cairn, ${how}: runtime.signal returned (in the client)`, cairn.returned);
    latencyRow(`cairn, ${how}: COMPLETED recorded`, cairn.completed);
    offsets.push(`cairn worker (${how}) ${fmt(cairn.clock.offset * 1000)} µs (rtt ${fmt(cairn.clock.rtt * 1000)} µs)`);
    if (peers) {
      const dbos = await dbosSignalLatency(peers.dbos, SIGNALS, SIGNAL_WARM_UP, gap);
      latencyRow(`${peers.dbos.label}, ${how}: DBOS.recv returned in the workflow`, dbos.received);
      latencyRow(`${peers.dbos.label}, ${how}: DBOSClient.send returned`, dbos.returned);
      offsets.push(
        `DBOS client process (${how}) ${fmt(dbos.clock.offset * 1000)} µs (rtt ${fmt(dbos.clock.rtt * 1000)} µs)`,
      );
    }
  }
  printTable(["ms from the signal call", "mean", "p50", "p90", "p99", "max"], lines);
  console.log(
    `   cairn: the client (this process) calls runtime.signal; a worker process (concurrency ${DEFAULT_WORKER_CONCURRENCY}, the default) is woken\n` +
      "   by NOTIFY, claims the run and records RUNNING, replays it to the wait and runs on. DBOS: workflows wait in\n" +
      "   DBOS.recv in this process; a child process calls DBOSClient.send.\n" +
      `   clock offsets, child minus this process: ${offsets.join("; ")}.`,
  );
  const p50 = quantile(
    [...idleRunning].sort((a, b) => a - b),
    0.5,
  );
  console.log(
    `   goal: p50 signal -> RUNNING across processes, worker idle ${SIGNAL_GAP} ms first, under 10 ms: ${fmt(p50)} ms${p50 < 10 ? " (met)" : " MISSED"}\n`,
  );
}
