import { Runtime, silentLogger } from "cairn";
import { PostgresBackend } from "cairn/postgres";
import pg from "pg";
import { bench, recordGaps } from "./bench-agent.ts";
import { Child } from "./child.ts";
import { fmt, int, median } from "./figures.ts";
import { POOL } from "./options.ts";
import { databaseOf } from "./server-cpu.ts";

/** Cairn as the bench measures it: sequential runs in one process, concurrent batches across processes. */

interface CairnSequential {
  run(steps: number): Promise<number[]>;
  close(): Promise<void>;
}

/** A Runtime with its worker in this process, on its own schema, kept open across rounds. */
export async function cairnSequential(
  url: string,
  schema: string,
  durability: "machine" | "process",
): Promise<CairnSequential> {
  const backend = new PostgresBackend({ connectionString: url, schema, durability, max: POOL });
  const runtime = new Runtime({ agents: [bench], backend, logger: silentLogger });
  await runtime.start();
  return {
    async run(steps) {
      const measured: number[] = [];
      recordGaps(measured);
      const handle = await runtime.run(bench, "steps", { n: steps });
      const sum = await handle.result();
      recordGaps(undefined);
      if (sum !== (steps * (steps - 1)) / 2) throw new Error(`cairn: wrong result ${sum}`);
      const recorded = (await runtime.history(handle.id)).steps;
      if (recorded.length !== steps || recorded.some((s) => s.status !== "completed")) {
        throw new Error("cairn: steps not journaled");
      }
      if (measured.length !== steps) throw new Error(`cairn: ${measured.length} gaps for ${steps} steps`);
      return measured;
    },
    close: () => runtime.shutdown(),
  };
}

/** One system of the concurrent measurement, ready for its batches. */
export interface ConcurrentSystem {
  name: string;
  /** The database whose server backends' CPU a batch counts. */
  database: string;
  /** The process that starts the runs and waits for their results. */
  client: Child;
  /** Its worker processes (Cairn's), whose CPU a batch counts too. */
  workers: Child[];
  /** Cairn's configurations, compared with DBOS for the goal. */
  cairn?: boolean;
  /** Cairn's worker processes. */
  workerCount?: number;
  /** Cairn's workers at the worker's default concurrency (not one slot per run). */
  defaultConcurrency?: boolean;
  /** One batch: ms until the process that started the runs saw every result. */
  batch: () => Promise<{ ms: number; startedAt: number }>;
  /** What the table's note says of it, once every batch ran. */
  note: () => string;
  close: () => Promise<void>;
}

/** One batch of the system in `child`: ms until it saw every result, and when it started (shared clock). */
export async function batchOf(child: Child): Promise<{ ms: number; startedAt: number }> {
  const done = child.next("batch");
  child.send({ kind: "batch" });
  const { ms, startedAt } = await done;
  return { ms, startedAt };
}

/** A started client-only Runtime on `schema` (it applies the migrations). */
export async function clientRuntime(url: string, schema: string): Promise<Runtime> {
  const client = new Runtime({
    agents: [bench],
    backend: new PostgresBackend({ connectionString: url, schema, max: POOL }),
    logger: silentLogger,
    worker: false,
  });
  await client.start();
  return client;
}

/**
 * Cairn's client for the concurrent batches (in a `system` process of its own): a client-only
 * Runtime on `schema` that starts the runs and waits for each result, checking every output.
 */
export async function cairnClient(url: string, schema: string) {
  const client = await clientRuntime(url, schema);
  return {
    async batch(runs: number, steps: number): Promise<number> {
      const t0 = performance.now();
      const handles = await Promise.all(Array.from({ length: runs }, () => client.run(bench, "steps", { n: steps })));
      const ended = await Promise.all(handles.map((h) => client.waitFor(h.id)));
      const ms = performance.now() - t0;
      const wrong = ended.filter((r) => r.state !== "COMPLETED" || r.output !== (steps * (steps - 1)) / 2);
      if (wrong.length > 0) throw new Error(`cairn: ${wrong.length} runs not COMPLETED with the right output`);
      return ms;
    },
    close: () => client.shutdown(),
  };
}

/**
 * Cairn with `workers` worker processes on `schema`: a client-only Runtime here starts the runs and
 * waits for them. Each batch checks every run COMPLETED with the right output; `close` checks the
 * journal holds every step of every batch once, then stops the workers.
 */
export async function cairnConcurrent(
  url: string,
  schema: string,
  workers: number,
  runs: number,
  steps: number,
  warmUpBatches: number,
  concurrency: number | undefined,
): Promise<ConcurrentSystem> {
  // The client first: its Runtime applies the migrations before the workers start.
  const client = new Child("system", [
    "--system",
    "cairn-client",
    "--url",
    url,
    "--schema",
    schema,
    "--runs",
    String(runs),
    "--run-steps",
    String(steps),
  ]);
  await client.next("system");
  const spawned = await spawnWorkers(url, schema, workers, concurrency);
  const done = new Map<number, number>();
  const recorded: number[] = [];
  let batches = 0;
  let lastCompleted = 0;
  let completed = 0;
  let allReported = () => {};
  for (const c of spawned) {
    c.on((m) => {
      if (m.kind !== "completed") return;
      done.set(m.worker, (done.get(m.worker) ?? 0) + m.runs.length);
      for (const r of m.runs) lastCompleted = Math.max(lastCompleted, r.at);
      completed += m.runs.length;
      if (completed === runs) allReported();
    });
  }
  const batch = async () => {
    completed = 0;
    const reported = new Promise<void>((resolve) => {
      allReported = resolve;
    });
    const { ms, startedAt } = await batchOf(client);
    await reported; // the workers' messages may come after the wake-ups
    // The warm-up batches are not counted.
    if (batches++ < warmUpBatches) done.clear();
    else recorded.push(lastCompleted - startedAt);
    return { ms, startedAt };
  };
  return {
    name: `cairn "machine", ${workers} worker process${workers === 1 ? "" : "es"}, concurrency ${concurrency ?? "default"}`,
    workerCount: workers,
    defaultConcurrency: concurrency === undefined,
    database: databaseOf(url),
    client,
    workers: spawned,
    cairn: true,
    batch,
    note: () => {
      const measured = Math.max(1, batches - warmUpBatches);
      const perWorker = spawned.map((_, i) => int((done.get(i) ?? 0) / measured)).join("/");
      return `runs per worker ${perWorker}; last COMPLETED recorded by a worker at ${fmt(median(recorded))} ms`;
    },
    close: async () => {
      try {
        const journaled = await countSteps(url, schema);
        if (journaled !== runs * steps * batches) throw new Error(`cairn: ${journaled} steps journaled`);
      } finally {
        await Promise.all(spawned.map((c) => c.stop()));
        await client.stop();
      }
    },
  };
}

/** `workers` worker processes on `schema`, at `concurrency` (the worker's default when undefined), ready. */
async function spawnWorkers(url: string, schema: string, workers: number, concurrency: number | undefined) {
  const args = (i: number) => [
    "--url",
    url,
    "--schema",
    schema,
    "--index",
    String(i),
    ...(concurrency === undefined ? [] : ["--concurrency", String(concurrency)]),
  ];
  const spawned = Array.from({ length: workers }, (_, i) => new Child("worker", args(i)));
  await Promise.all(spawned.map((c) => c.next("ready")));
  return spawned;
}

async function countSteps(url: string, schema: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    // Distinct (run, seq) in the step journal: a step's start record and its result are two entries.
    return (
      await c.query(
        `SELECT count(*)::integer AS n FROM (SELECT DISTINCT run_id, (e->>'seq')::int FROM "${schema}".journal, json_array_elements(steps) e) t`,
      )
    ).rows[0].n as number;
  } finally {
    await c.end();
  }
}
