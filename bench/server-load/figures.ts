import { percentiles } from "../report.ts";
import { rssOf } from "./dev-server.ts";
import { delivery, deliveryTo, type EventClient } from "./event-client.ts";
import type { Load } from "./open-loop.ts";
import { fmt, n } from "./options.ts";
import type { Settled } from "./settle.ts";

/** The figures: latencies of the start requests and of the events, then what the load did and cost. */
export function printFigures(
  load: Load,
  settled: Settled,
  clients: EventClient[],
  pid: number | undefined,
  cores: number,
): void {
  printLatencies(load, settled);
  printSummary(load, settled, clients, pid, cores);
}

function printLatencies({ starts }: Load, { log }: Settled): void {
  // Figures.
  const ok = starts.filter((s) => s.status === 201);
  const row = (label: string, v: number[], unit = "ms") => {
    const p = percentiles(v);
    const max = v.reduce((a, b) => Math.max(a, b), Number.NEGATIVE_INFINITY);
    console.log(
      `   ${label.padEnd(44)}${[p.p50, p.p95, p.p99, max].map((x) => fmt(x).padStart(9)).join("")}  ${unit}  (${n(v.length)})`,
    );
  };
  console.log(`   ${"".padEnd(44)}${["p50", "p95", "p99", "max"].map((h) => h.padStart(9)).join("")}`);
  row(
    "POST /api/runs: send → response",
    starts.map((s) => s.latency),
  );
  row(
    "  the same, from its time on the schedule",
    starts.map((s) => s.latency + s.lag),
  );
  row(
    "  lateness of the generator in sending",
    starts.map((s) => s.lag),
  );
  const logged = ok.flatMap((s) => {
    const ts = s.runId === undefined ? undefined : log.get(s.runId);
    return ts?.length === 3 ? [{ s, ts: ts.map((t) => t.at) as [number, number, number] }] : [];
  });
  row(
    "  send → PENDING recorded (`at`)",
    logged.map(({ s, ts }) => ts[0] - s.sentAt),
  );
  row(
    "  PENDING → RUNNING (claimed)",
    logged.map(({ ts }) => ts[1] - ts[0]),
  );
  row(
    "  RUNNING → COMPLETED",
    logged.map(({ ts }) => ts[2] - ts[1]),
  );
  row(
    "  COMPLETED → response read",
    logged.map(({ s, ts }) => s.sentAt + s.latency - ts[2]),
  );
  row("event delivery: transition `at` → client read", delivery);
  for (const [to, v] of deliveryTo) row(`  of transitions to ${to}`, v);
}

function printSummary(
  { starts, sendMs, loadMs, maxInFlight, lastResponseAt, serverCpu, ownCpu, elu, loopDelay }: Load,
  { runIds, log, lastCompletedAt }: Settled,
  clients: EventClient[],
  pid: number | undefined,
  cores: number,
): void {
  const ok = starts.filter((s) => s.status === 201);
  const errors = starts.filter((s) => s.status !== 201);
  // The histogram's figures include its 1 ms timer.
  const beyondTimer = (ns: number) => fmt(Math.max(0, ns / 1e6 - 1));
  console.log(
    `   generator (this process): event loop busy ${fmt(elu * 100)}% of the load; its delay p50 ${beyondTimer(loopDelay.percentile(50))} ms,` +
      ` p99 ${beyondTimer(loopDelay.percentile(99))} ms, max ${beyondTimer(loopDelay.max)} ms (the clients' read times include it)`,
  );
  console.log(
    `   start requests: ${n(starts.length)} sent in ${fmt(sendMs / 1000)} s (${fmt(starts.length / (sendMs / 1000))}/s), the last answered ${fmt((loadMs - sendMs) / 1000)} s after;` +
      ` ${n(ok.length)} answered 201, ${n(errors.length)} errors; at most ${n(maxInFlight)} in flight`,
  );
  const errorKinds = new Map<string, number>();
  for (const e of errors) {
    const kind = e.error ?? String(e.status);
    errorKinds.set(kind, (errorKinds.get(kind) ?? 0) + 1);
  }
  for (const [kind, count] of errorKinds) console.log(`     ${n(count)} × ${kind}`);
  const byState = new Map<string, number>();
  for (const id of runIds) {
    const state = log.get(id)?.at(-1)?.to ?? "not finished";
    byState.set(state, (byState.get(state) ?? 0) + 1);
  }
  console.log(
    `   runs started ${n(runIds.length)}: ${[...byState].map(([s, c]) => `${n(c)} ${s}`).join(", ")}; the last COMPLETED ${fmt(lastCompletedAt - lastResponseAt)} ms after the last start's response`,
  );
  console.log(
    `   CPU during the load: server ${fmt((serverCpu / (loadMs / 1000)) * 100)}% of a core, generator ${fmt((ownCpu / (loadMs / 1000)) * 100)}% (of ${cores} cores: ${cores * 100}%); server rss ${rssOf(pid)}`,
  );
  const lastRead = clients.reduce((max, c) => Math.max(max, c.lastReadAt), 0);
  console.log(
    `   the last client read its last transition ${fmt(lastRead - lastCompletedAt)} ms after the last COMPLETED\n`,
  );
}
