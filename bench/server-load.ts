/**
 * Issue 7's load check of the HTTP API: `cairn dev` (started as a user would, a child process on a
 * fresh SQLite file, its URL read from what it prints) with C clients on the all-runs event stream
 * `GET /api/events` (default 200) while runs are started with `POST /api/runs` at R per second
 * (default 50) for S seconds (default 30), open loop: each request leaves at its time on a fixed
 * schedule, whether or not the ones before it have been answered. The workflow is
 * report_builder/build (two tool steps, a few ms; CAIRN_DEMO_STEP_DELAY_MS is removed from the
 * child's environment).
 *
 * Prints, beside the machine: the start requests' latency (send → response) and errors, and where
 * it goes (send → PENDING's `at`, → RUNNING, → COMPLETED, → the response read); the event delivery
 * latency (a transition's `at`, the server's clock, → a client reading it, the same clock); the CPU
 * each process used. Clients and requests use node:http, with a small SSE parser (no dependency). Then, once every started run has finished and the clients have caught
 * up, checks that every client received every transition of every started run (PENDING, RUNNING,
 * COMPLETED, ids 1..n) exactly once and in order, the same as GET /api/runs/:id/transitions
 * records, with the feed's sequence numbers gapless; prints the counts and PASS or FAIL, and exits
 * with 1 on FAIL. One machine on loopback: the load generator (this process, clients included)
 * shares the cores with the server. Figures only; nothing is asserted on time.
 *
 *   npm run bench:server                                        # builds dist/, then 30 s, 200 clients, 50/s
 *   npm run bench:server -- --seconds 5 --clients 20 --rate 10
 */
import { rmSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { checkDelivery } from "./server-load/delivery-check.ts";
import { type Server, startServer, stopServer } from "./server-load/dev-server.ts";
import type { EventClient } from "./server-load/event-client.ts";
import { printFigures } from "./server-load/figures.ts";
import { agent } from "./server-load/http.ts";
import { runLoad } from "./server-load/open-loop.ts";
import { CLIENTS, dir, fmt, n } from "./server-load/options.ts";
import { settle } from "./server-load/settle.ts";
import { clientsReady, openClients, warmUp } from "./server-load/warm-up.ts";

// The bench in parts (bench/server-load/): options.ts (settings and helpers), dev-server.ts (the
// server), http.ts (requests), event-client.ts (an SSE client of GET /api/events), warm-up.ts,
// open-loop.ts (the load), settle.ts, figures.ts and delivery-check.ts.

const cpu = cpus();
console.log(
  `machine: ${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores, node ${process.version}, ${process.platform} ${process.arch}` +
    `; load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
);
console.log(
  `one machine, loopback: the load generator (this process: ${n(CLIENTS)} SSE clients and the requests) shares the ${cpu.length} cores with the server`,
);

let server: Server | undefined;
let clients: EventClient[] = [];
let exitCode = 0;
try {
  const t0 = performance.now();
  server = await startServer();
  const base = server.url;
  const pid = server.child.pid;
  console.log(
    `cairn dev at ${base}/ (pid ${pid}) on ${join(dir, "cairn.db")}, ready in ${fmt(performance.now() - t0)} ms`,
  );
  await warmUp(base);
  // The clients connect and get their `ready`.
  const tConnect = performance.now();
  clients = openClients(base);
  await clientsReady(clients, tConnect);
  const load = await runLoad(base, pid);
  const settled = await settle(base, load.starts, clients);
  printFigures(load, settled, clients, pid, cpu.length);
  if (!checkDelivery(settled, clients)) exitCode = 1;
} catch (error) {
  console.error(`server-load: ${error instanceof Error ? error.message : String(error)}`);
  if (server) console.error(server.stderr());
  exitCode = 1;
} finally {
  for (const c of clients) c.close();
  agent.destroy();
  if (server) console.log(`\ncairn dev ${await stopServer(server.child)}`);
  rmSync(dir, { recursive: true, force: true });
}
process.exitCode = exitCode;
