import { batchOf, type ConcurrentSystem, cairnConcurrent } from "./cairn-systems.ts";
import { Child } from "./child.ts";
import { fmt, int, mean, median, printTable } from "./figures.ts";
import { POOL } from "./options.ts";
import type { PeerUrls } from "./peers.ts";
import type { SystemName } from "./roles.ts";
import { type BatchCpu, cpuCell, databaseOf, withCpu } from "./server-cpu.ts";
import type { Settings } from "./settings.ts";

/** 2. Concurrent: R runs × S steps started together, batches of the systems interleaved (see bench/postgres.ts). */
export async function concurrentSection(settings: Settings, cairnUrl: string, peerUrls: PeerUrls | undefined) {
  const systemsConc = await concurrentSystems(settings, cairnUrl, peerUrls);
  const measured = await measureBatches(settings, systemsConc);
  printConcurrent(settings, systemsConc, measured, peerUrls);
}

type Measured = Map<ConcurrentSystem, { ms: number[]; cpu: BatchCpu[] }>;

/** Every system's processes, started: the peers' one each, Cairn's client and workers per worker count. */
async function concurrentSystems(
  { RUNS, RUN_STEPS, WORKERS, WARM_UP_BATCHES }: Settings,
  cairnUrl: string,
  peerUrls: PeerUrls | undefined,
): Promise<ConcurrentSystem[]> {
  // 2. Concurrent -----------------------------------------------------------------------------
  // Interleaved: each system's first batch, then each system's second, and so on, so that what
  // the shared machine does at a moment (a noisy neighbour, the server's checkpoints) falls on
  // all of them alike and the ratios compare batches of the same minutes.
  process.stderr.write("2. concurrent\n");
  // Every system in processes of its own: DBOS and LangGraph each in one (systemRole), Cairn's
  // client-only Runtime in one and its workers in theirs.
  const systemsConc: ConcurrentSystem[] = [];
  const peerBatches = async (system: SystemName, url: string, name: (label: string) => string, note: string) => {
    const child = new Child("system", [
      "--system",
      system,
      "--url",
      url,
      "--runs",
      String(RUNS),
      "--run-steps",
      String(RUN_STEPS),
    ]);
    const { label } = await child.next("system");
    systemsConc.push({
      name: name(label),
      database: databaseOf(url),
      client: child,
      workers: [],
      batch: () => batchOf(child),
      note: () => note,
      close: () => child.stop(),
    });
  };
  if (peerUrls) {
    await peerBatches(
      "dbos",
      peerUrls.dbosUrl,
      (label) => `${label}, 1 process`,
      "DBOS.startWorkflow ×50, then getResult ×50; system database pool 10 (DBOS's default)",
    );
  }
  // Every worker count at the worker's default concurrency (what the goal is judged on, with one
  // worker), then at one slot per run.
  for (const concurrency of [undefined, RUNS]) {
    for (const workers of WORKERS) {
      process.stderr.write(`2. concurrent: starting cairn with ${workers} worker process(es)\n`);
      const schema = `conc_w${workers}_c${concurrency ?? "default"}`;
      systemsConc.push(await cairnConcurrent(cairnUrl, schema, workers, RUNS, RUN_STEPS, WARM_UP_BATCHES, concurrency));
    }
  }
  if (peerUrls) {
    for (const durability of ["sync", "async"] as const) {
      await peerBatches(
        `langgraph-${durability}`,
        peerUrls.graphUrl,
        (label) => `${label} "${durability}", 1 process`,
        "app.invoke ×50 with distinct thread ids; PostgresSaver's pool 10 (pg's default)",
      );
    }
  }
  return systemsConc;
}

/** The warm-up batches, then the measured ones, interleaved; every system's processes closed after. */
async function measureBatches(
  { BATCHES, WARM_UP_BATCHES }: Settings,
  systemsConc: ConcurrentSystem[],
): Promise<Measured> {
  const measured = new Map<ConcurrentSystem, { ms: number[]; cpu: BatchCpu[] }>(
    systemsConc.map((system) => [system, { ms: [], cpu: [] }]),
  );
  try {
    // Warm-up batches (5,000 steps each by default, as the sequential warm-up), not measured.
    for (let i = 0; i < WARM_UP_BATCHES; i++) for (const system of systemsConc) await system.batch();
    for (let i = 0; i < BATCHES; i++) {
      process.stderr.write(`2. concurrent, batch ${i + 1}/${BATCHES}\n`);
      for (const system of systemsConc) {
        const b = await withCpu(system.client, system.workers, system.database, system.batch);
        const m = measured.get(system) as { ms: number[]; cpu: BatchCpu[] };
        m.ms.push(b.result.ms);
        m.cpu.push(b.cpu);
      }
    }
  } finally {
    for (const system of systemsConc) await system.close();
  }
  return measured;
}

function printConcurrent(
  { RUNS, RUN_STEPS, BATCHES, WARM_UP_BATCHES }: Settings,
  systemsConc: ConcurrentSystem[],
  measured: Measured,
  peerUrls: PeerUrls | undefined,
): void {
  const conc: string[][] = [];
  const concNotes: string[] = [];
  const stepsPerS = (ms: number) => (RUNS * RUN_STEPS) / (ms / 1000);
  const dbosMs = peerUrls ? measured.get(systemsConc[0] as ConcurrentSystem)?.ms : undefined;
  const dbosStepsPerS = dbosMs ? stepsPerS(median(dbosMs)) : Number.NaN;
  let judged: { name: string; rate: number } | undefined;
  for (const system of systemsConc) {
    const { ms, cpu } = measured.get(system) as { ms: number[]; cpu: BatchCpu[] };
    const rate = stepsPerS(median(ms));
    if (system.cairn && system.defaultConcurrency && system.workerCount === 1) judged = { name: system.name, rate };
    conc.push([
      system.name,
      fmt(median(ms)),
      int(RUNS / (median(ms) / 1000)),
      int(rate),
      int(mean(ms.map(stepsPerS))),
      `${int(stepsPerS(Math.max(...ms)))}–${int(stepsPerS(Math.min(...ms)))}`,
      Number.isNaN(dbosStepsPerS) ? "1.0" : (rate / dbosStepsPerS).toFixed(1),
      cpuCell(cpu, system.workers.length > 0),
    ]);
    concNotes.push(`   ${system.name}: ${system.note()}`);
  }
  console.log(
    `2. Concurrent: ${RUNS} runs × ${RUN_STEPS} steps started together; ${BATCHES} measured batches of each system after` +
      ` ${WARM_UP_BATCHES} warm-up batches, interleaved (each system's first batch, then each one's second, …); median batch`,
  );
  printTable(
    ["", "ms", "runs/s", "steps/s", "steps/s mean", "steps/s range", "× DBOS", "CPU in the batch (median)"],
    conc,
  );
  console.log(
    "   ms: from starting the first run to the last result seen by the process that started them (median batch);\n" +
      "   runs/s, steps/s and × DBOS of the median batch; steps/s mean: the mean over the batches of each one's steps/s.\n" +
      `   cairn: a client-only Runtime in a process of its own (runtime.run ×${RUNS}, then runtime.waitFor ×${RUNS}); the runs are\n` +
      `   claimed and driven by child worker processes (Runtime with a worker, pool ${POOL} each), at the worker's default\n` +
      `   concurrency and at concurrency ${RUNS} (one slot per run).\n` +
      "   What the runs of one process ask for in the same turn of the event loop shares a statement: the client's\n" +
      "   creations, each worker's claims, its RUNNING and ending transitions, and its step writes (one fenced journal\n" +
      "   insert and one commit per round of steps of all its runs; a run's last results ride with its COMPLETED).\n" +
      "   Each system in processes of its own: DBOS and LangGraph one each, Cairn its client's and its workers'.\n" +
      "   CPU: ms used in the batch by the process that started the runs and by the worker processes; machine: busy share of all cores\n" +
      "   (every process on the machine, the PostgreSQL server and anything else running, included).",
  );
  for (const note of concNotes) console.log(note);
  if (!Number.isNaN(dbosStepsPerS) && judged) {
    const times = judged.rate / dbosStepsPerS;
    console.log(
      `   goal: cairn at least 10x DBOS, judged on the median batch of ${judged.name} (the default deployment):` +
        ` ${times.toFixed(1)}x${times >= 10 ? " (met)" : " MISSED"}; every worker count is in the table above`,
    );
  } else if (!Number.isNaN(dbosStepsPerS)) {
    console.log("   goal: cairn at least 10x DBOS: not judged (it is judged with 1 worker process: --workers 1,…)");
  }
  console.log();
}
