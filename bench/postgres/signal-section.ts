import type { DbosPeer } from "../peers/postgres-peer-types.ts";
import { fmt, printTable, quantile } from "./figures.ts";
import type { PeerUrls } from "./peers.ts";
import type { Settings } from "./settings.ts";
import { cairnSignalLatency, dbosSignalLatency } from "./signal-latency.ts";

/** What the main process has opened that its end must close: DBOS, once section 3 opens it here. */
export interface OpenPeers {
  peers?: { dbos: DbosPeer; dbosUrl: string };
}

/** 3. Signal latency across processes (see bench/postgres.ts); DBOS is opened into `open`. */
export async function signalSection(
  { SIGNALS, SIGNAL_WARM_UP }: Settings,
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
    `3. Signal latency across processes: ${SIGNALS} runs parked, signalled one at a time (after ${SIGNAL_WARM_UP} not measured)`,
  );
  const cairnSignals = await cairnSignalLatency(cairnUrl, "signal", SIGNALS, SIGNAL_WARM_UP);
  const lines: string[][] = [];
  const latencyRow = (name: string, ms: number[]) => {
    const s = [...ms].sort((a, b) => a - b);
    lines.push([name, ...[0.5, 0.9, 0.99, 1].map((q) => fmt(quantile(s, q)))]);
  };
  latencyRow("cairn: RUNNING recorded by the worker process", cairnSignals.running);
  latencyRow("cairn: workflow code past ctx.waitForSignal", cairnSignals.resumed);
  latencyRow("cairn: runtime.signal returned (in the client)", cairnSignals.returned);
  latencyRow("cairn: COMPLETED recorded", cairnSignals.completed);
  let dbosOffset = "";
  if (peers) {
    const dbosSignals = await dbosSignalLatency(peers.dbos, SIGNALS, SIGNAL_WARM_UP);
    latencyRow(`${peers.dbos.label}: DBOS.recv returned in the workflow`, dbosSignals.received);
    latencyRow(`${peers.dbos.label}: DBOSClient.send returned`, dbosSignals.returned);
    dbosOffset = `; DBOS client process ${fmt(dbosSignals.clock.offset * 1000)} µs (rtt ${fmt(dbosSignals.clock.rtt * 1000)} µs)`;
  }
  printTable(["ms from the signal call", "p50", "p90", "p99", "max"], lines);
  console.log(
    "   cairn: the client (this process) calls runtime.signal; a worker process (concurrency 16, the default) is woken\n" +
      "   by NOTIFY, claims the run and records RUNNING, replays it to the wait and runs on. DBOS: workflows wait in\n" +
      "   DBOS.recv in this process; a child process calls DBOSClient.send.\n" +
      `   clock offsets, child minus this process: cairn worker ${fmt(cairnSignals.clock.offset * 1000)} µs` +
      ` (rtt ${fmt(cairnSignals.clock.rtt * 1000)} µs)${dbosOffset}.`,
  );
  console.log(
    `   goal: p50 signal -> RUNNING under 20 ms across processes: ${
      quantile(
        [...cairnSignals.running].sort((a, b) => a - b),
        0.5,
      ) < 20
        ? "met"
        : "MISSED"
    }\n`,
  );
}
