import { Runtime, silentLogger } from "cairn";
import { PostgresBackend } from "cairn/postgres";
import { bench, onParkedResumed } from "./bench-agent.ts";
import { cairnClient, cairnSequential } from "./cairn-systems.ts";
import { cpuMs, now, send, type ToChild } from "./ipc.ts";
import { POOL, values } from "./options.ts";
import { loadPeers } from "./peers.ts";

/** The roles of the bench's child processes (`--role worker | system | dbos-sender`). */

/** A worker process: a Runtime with a worker on `--url`/`--schema`, reporting what it records. */
export async function workerRole(): Promise<void> {
  const index = Number(values.index);
  const backend = new PostgresBackend({ connectionString: values.url ?? "", schema: values.schema ?? "", max: POOL });
  const concurrency = values.concurrency === undefined ? {} : { concurrency: Number(values.concurrency) };
  const runtime = new Runtime({ agents: [bench], backend, logger: silentLogger, worker: concurrency });
  // The COMPLETED runs of one turn go out as one message: a message per run costs the worker a
  // write to its IPC pipe per run (fifty per batch) in the middle of the batch it measures.
  let completed: { id: string; at: number }[] = [];
  const reportCompleted = () => {
    send({ kind: "completed", runs: completed, worker: index });
    completed = [];
  };
  runtime.onTransition((t) => {
    const at = now();
    if (t.to === "RUNNING" && t.from === "RESUMING") send({ kind: "running", id: t.runId, at });
    if (t.to === "COMPLETED") {
      if (completed.length === 0) setImmediate(reportCompleted);
      completed.push({ id: t.runId, at });
    }
  });
  onParkedResumed((id, at) => send({ kind: "resumed", id, at }));
  await runtime.start();
  process.on("message", (m: ToChild) => {
    if (m.kind === "clock") send({ kind: "clock", at: now() });
    if (m.kind === "cpu") send({ kind: "cpu", ms: cpuMs() });
    if (m.kind === "stop") void runtime.shutdown().then(() => process.exit(0));
  });
  send({ kind: "ready" });
}

/** A DBOS client process: sends `go` to the workflow it is told, stamping when it called. */
export async function dbosSenderRole(): Promise<void> {
  const { dbosSender } = await loadPeers();
  const sender = await dbosSender(values.url ?? "");
  process.on("message", (m: ToChild) => {
    if (m.kind === "clock") send({ kind: "clock", at: now() });
    if (m.kind === "send") {
      sender.send(m.id).then(
        (t) => send({ kind: "sent", id: m.id, ...t }),
        (error: unknown) => send({ kind: "error", message: String(error) }),
      );
    }
    if (m.kind === "stop") void sender.close().then(() => process.exit(0));
  });
  send({ kind: "ready" });
}

/**
 * The systems measured, each in a process of its own: Cairn's sequential configurations, the
 * client-only Runtime that starts Cairn's concurrent runs (its workers are processes of their own),
 * DBOS and LangGraph.
 */
export type SystemName =
  | "cairn-machine"
  | "cairn-process"
  | "cairn-client"
  | "dbos"
  | "langgraph-sync"
  | "langgraph-async";

/**
 * A process that measures one system: it opens the system on `--url`, says what it is (its
 * label), and answers requests: `steps` runs one run of N steps (sequential), sending
 * back the per-step gaps and the CPU time this process spent per step (a warm-up is one such run
 * whose figures are left out); `batch` starts `--runs` runs of `--run-steps` steps together and
 * sends the ms until every result was in. One process per system, so that no system runs in a
 * process whose JIT and heap another system's code shaped.
 */
export async function systemRole(): Promise<void> {
  const system = values.system as SystemName;
  const url = values.url ?? "";
  const runs = Number(values.runs);
  const runSteps = Number(values["run-steps"]);
  let label: string;
  let run: (steps: number) => Promise<number[]> = () => Promise.reject(new Error(`${system}: no sequential runs`));
  let batch: () => Promise<number> = () => Promise.reject(new Error(`${system}: no concurrent batches`));
  let close: () => Promise<void>;
  if (system === "cairn-client") {
    const client = await cairnClient(url, values.schema ?? "");
    label = "cairn";
    batch = () => client.batch(runs, runSteps);
    close = () => client.close();
  } else if (system === "cairn-machine" || system === "cairn-process") {
    const durability = system === "cairn-machine" ? "machine" : "process";
    const cairn = await cairnSequential(url, values.schema ?? `seq_${durability}`, durability);
    label = "cairn PostgresBackend";
    run = (n) => cairn.run(n);
    close = () => cairn.close();
  } else if (system === "dbos") {
    const dbos = await (await loadPeers()).openDbos(url);
    label = dbos.label;
    run = (n) => dbos.sequential(n, 0);
    batch = () => dbos.concurrent(runs, runSteps);
    close = () => dbos.shutdown();
  } else {
    const durability = system === "langgraph-sync" ? "sync" : "async";
    const graph = await (await loadPeers()).openLangGraph(url);
    label = graph.label;
    run = (n) => graph.sequential(durability, n, 0);
    batch = () => graph.concurrent(durability, runs, runSteps);
    close = () => graph.close();
  }
  process.on("message", (m: ToChild) => {
    if (m.kind === "steps") {
      void (async () => {
        const cpu0 = cpuMs();
        const us = await run(m.steps);
        send({ kind: "steps", us, cpuUs: ((cpuMs() - cpu0) * 1000) / m.steps });
      })().catch((error: unknown) => send({ kind: "error", message: String(error) }));
    }
    if (m.kind === "batch") {
      const startedAt = now();
      batch().then(
        (ms) => send({ kind: "batch", ms, startedAt }),
        (error: unknown) => send({ kind: "error", message: String(error) }),
      );
    }
    if (m.kind === "cpu") send({ kind: "cpu", ms: cpuMs() });
    if (m.kind === "stop") void close().then(() => process.exit(0));
  });
  send({ kind: "system", label });
}
