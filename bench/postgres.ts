/**
 * Cairn on PostgreSQL beside DBOS Transact and LangGraph.js (PostgresSaver), on one server, each
 * system in a database of its own that this bench creates and drops (Cairn's configurations in
 * schemas of their own in its database). Prints the machine and the server's settings, then:
 *
 * 1. Sequential: one run of N trivial steps (default 1,000) per system and round: the bare cost of
 *    one synchronous commit of a small row (in this process), Cairn's PostgresBackend with
 *    durability "machine" (and "process"), DBOS and LangGraph, each in a child process of its own
 *    (so that no system runs on a JIT and a heap another one shaped), each once per round in turn
 *    (default 3 rounds, after a warm-up run of 5,000 steps, so that each is measured as the
 *    long-running process it would be in production, not while V8 still compiles it) so that
 *    what else the shared server does falls on all of them; µs per step (median round) and
 *    p50/p90/p99, with the CPU the system's process and its server backends spent per step.
 * 2. Concurrent: R runs × S steps (default 50 × 20) started together; runs/s and steps/s. Cairn
 *    with 1, 2 and 4 worker processes (child Node processes, each a Runtime with a worker on the
 *    same schema; a client-only Runtime in another child starts the runs and waits until every run
 *    is COMPLETED), each at the worker's default concurrency and at one slot per run; DBOS and
 *    LangGraph each in a child process of its own, started together as their APIs allow.
 *    Median and mean of 10 batches after 5 warm-up batches (on a small machine one batch differs
 *    from the next by ±25 %), the systems' batches interleaved (each one's first, then each one's
 *    second, …) so that a noisy moment falls on all of them; with the CPU each batch took and
 *    where. Every worker count is reported; the goal (10× DBOS) is judged on the median batch of
 *    Cairn as deployed by default: one worker process at the default concurrency. No child
 *    process gets a V8 flag.
 * 3. Signal latency across processes: runs parked on `ctx.waitForSignal` in a worker process are
 *    signalled one at a time from this process (a client-only Runtime); the worker, woken over
 *    LISTEN/NOTIFY, records RUNNING. Each signal sent back-to-back (the moment the previous run
 *    ended) and, in a second series, after the worker sat idle 200 ms (`--signal-gap`). DBOS the
 *    same way: workflows in `DBOS.recv` in this process, `DBOSClient.send` from a child process.
 *
 * The peers live in bench/peers/ (postgres-peers.ts), a separate package, so that they never
 * become dependencies of cairn; without it installed, `--skip-peers` measures Cairn alone.
 * Timestamps that cross processes are `performance.timeOrigin + performance.now()` (epoch ms,
 * sub-ms); the offset between the processes' clocks is estimated and printed.
 *
 *   npm run bench:postgres                    # installs bench/peers, builds dist/, everything
 *   npm run bench:postgres -- --skip-peers    # Cairn and the bare commit only
 *   npm run bench:postgres -- --rounds 5 --batches 5 --signals 500 --workers 1,2,4,8 --pool 20
 *   CAIRN_BENCH_PG_URL=postgresql://user@host:5432/postgres npm run bench:postgres
 *   CAIRN_BENCH_CHILD_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" npm run bench:postgres   # profile the workers
 */
import { main } from "./postgres/main.ts";
import { values } from "./postgres/options.ts";
import { dbosSenderRole, systemRole, workerRole } from "./postgres/roles.ts";

// The bench in parts (bench/postgres/): options.ts (the command line, parsed in every process),
// main.ts and the three *-section.ts (the main process), roles.ts (the child processes' roles),
// child.ts (a child process and its messages), bench-agent.ts, cairn-systems.ts, signal-latency.ts,
// bare-commits.ts, server-cpu.ts and figures.ts. Every child runs this file in the role it is given.

// pg-pool inside DBOS's pool calls client.query while a query runs (pg deprecates that for pg 9):
// not something this bench does, and a line in the middle of its tables. Other warnings print.
process.removeAllListeners("warning");
process.on("warning", (warning) => {
  if (warning.message.startsWith("Calling client.query() when the client is already executing a query")) return;
  console.error(`${warning.name}: ${warning.message}`);
});

if (values.role === "worker") await workerRole();
else if (values.role === "system") await systemRole();
else if (values.role === "dbos-sender") await dbosSenderRole();
else await main();
