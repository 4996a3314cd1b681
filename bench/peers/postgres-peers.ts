/**
 * The peers of bench/postgres.ts, on the PostgreSQL server Cairn is measured on: DBOS Transact
 * (its system database) and LangGraph.js with its PostgreSQL checkpointer (PostgresSaver). Each
 * gets a database of its own that the bench creates and drops. Imported by a computed path, so
 * that neither the type-check of cairn nor `npm run bench` needs bench/peers installed.
 *
 * What a step is, for each:
 * - DBOS: a registered workflow whose every step is a `DBOS.runStep`, checkpointed in the system
 *   database (one INSERT … COMMIT per step) before the workflow goes on.
 * - LangGraph: a StateGraph of one node that loops to itself through a conditional edge, so one
 *   step is one node execution, i.e. one super-step: PostgresSaver commits the task's writes
 *   (putWrites: BEGIN, INSERT per write, COMMIT) and then a checkpoint of the whole state (put:
 *   BEGIN, an upsert per changed channel, the checkpoint row, COMMIT). With durability "sync" the
 *   next super-step waits for that checkpoint; with "async" (LangGraph's default) it does not.
 */
import { readFileSync } from "node:fs";
import { DBOS, DBOSClient } from "@dbos-inc/dbos-sdk";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import pg from "pg";
import type { DbosPeer, DbosSender, GraphDurability, LangGraphPeer } from "./postgres-peer-types.ts";

const version = (name: string): string =>
  JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), "utf8")).version;

/** Milliseconds on a clock shared by the processes of this machine (epoch-based, sub-ms). */
const now = () => performance.timeOrigin + performance.now();

// ---------------------------------------------------------------------------------------------
// DBOS

/** Per-step gaps (µs), recorded only while a measured sequential run has set it. */
let dbosGaps: number[] | undefined;
/** When each parked workflow's `DBOS.recv` returned (ms, shared clock), by workflow id. */
const received = new Map<string, { at: number; done: () => void }>();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function noop(i: number): Promise<number> {
  return i;
}

const dbosSteps = DBOS.registerWorkflow(
  async (n: number): Promise<number> => {
    let sum = 0;
    let last = performance.now();
    for (let i = 0; i < n; i++) {
      sum += await DBOS.runStep(() => noop(i), { name: "noop" });
      const t = performance.now();
      dbosGaps?.push((t - last) * 1000);
      last = t;
    }
    return sum;
  },
  { name: "cairnPgBenchSteps" },
);

const dbosPark = DBOS.registerWorkflow(
  async (): Promise<boolean> => {
    const message = await DBOS.recv<{ ok: boolean }>("go", { timeoutSeconds: 600 });
    const at = now();
    const waiter = received.get(DBOS.workflowID ?? "");
    if (waiter) {
      waiter.at = at;
      waiter.done();
    }
    return message?.ok === true;
  },
  { name: "cairnPgBenchPark" },
);

/** Launches DBOS on `url` (a fresh database: DBOS makes its system schema there). */
export async function openDbos(url: string): Promise<DbosPeer> {
  DBOS.setConfig({ name: "cairn-pg-bench", applicationVersion: "bench", systemDatabaseUrl: url, logLevel: "error" });
  await DBOS.launch();
  const expectSum = (n: number, sum: number) => {
    if (sum !== (n * (n - 1)) / 2) throw new Error(`DBOS: wrong result ${sum}`);
  };
  return {
    label: `DBOS ${version("@dbos-inc/dbos-sdk")}`,
    url,
    async sequential(steps, warmUp) {
      if (warmUp > 0) expectSum(warmUp, await dbosSteps(warmUp));
      const measured: number[] = [];
      dbosGaps = measured;
      const handle = await DBOS.startWorkflow(dbosSteps)(steps);
      const sum = await handle.getResult();
      dbosGaps = undefined;
      expectSum(steps, sum);
      const recorded = await DBOS.listWorkflowSteps(handle.workflowID);
      if (recorded?.length !== steps) throw new Error(`DBOS: ${recorded?.length} steps checkpointed, not ${steps}`);
      if (measured.length !== steps) throw new Error(`DBOS: ${measured.length} gaps for ${steps} steps`);
      return measured;
    },
    async concurrent(runs, steps) {
      const t0 = performance.now();
      const handles = await Promise.all(Array.from({ length: runs }, () => DBOS.startWorkflow(dbosSteps)(steps)));
      const sums = await Promise.all(handles.map((h) => h.getResult()));
      const ms = performance.now() - t0;
      for (const sum of sums) expectSum(steps, sum);
      return ms;
    },
    async park(count) {
      const ids: string[] = [];
      for (let i = 0; i < count; i++) ids.push((await DBOS.startWorkflow(dbosPark)()).workflowID);
      return ids;
    },
    async settled(ids) {
      // recv records its timeout's deadline (a durable sleep) before it looks for a message and
      // waits; once that is recorded for every workflow, give them a moment to be waiting.
      for (const id of ids) {
        while (((await DBOS.listWorkflowSteps(id)) ?? []).length === 0) await sleep(20);
      }
      await sleep(500);
    },
    received(id) {
      return new Promise<number>((resolve) => {
        const entry = { at: Number.NaN, done: () => resolve(entry.at) };
        received.set(id, entry);
      }).finally(() => received.delete(id));
    },
    async shutdown() {
      await DBOS.shutdown();
    },
  };
}

/** A DBOS client (another process than the workflows'): `send` stamps the time it is called. */
export async function dbosSender(url: string): Promise<DbosSender> {
  const client = await DBOSClient.create({ systemDatabaseUrl: url, applicationName: "cairn-pg-bench" });
  return {
    async send(id: string): Promise<{ calledAt: number; returnedAt: number }> {
      const calledAt = now();
      await client.send(id, { ok: true }, "go");
      return { calledAt, returnedAt: now() };
    },
    close: () => client.destroy(),
  };
}

// ---------------------------------------------------------------------------------------------
// LangGraph

const State = Annotation.Root({
  i: Annotation<number>(),
  n: Annotation<number>(),
  sum: Annotation<number>(),
});

/** Per-step gaps (µs), recorded only during a measured sequential run. */
let graphGaps: number[] | undefined;
let last = 0;

const graph = new StateGraph(State)
  .addNode("step", (s: typeof State.State) => {
    if (graphGaps) {
      const t = performance.now();
      graphGaps.push((t - last) * 1000);
      last = t;
    }
    return { i: s.i + 1, sum: s.sum + s.i };
  })
  .addEdge(START, "step")
  .addConditionalEdges("step", (s: typeof State.State) => (s.i < s.n ? "step" : END), ["step", END]);

/** PostgresSaver on `url` (a fresh database), with its own pg pool (pg's default size, 10). */
export async function openLangGraph(url: string): Promise<LangGraphPeer> {
  // What PostgresSaver.fromConnString(url) makes (a pool of pg's default size), kept to count rows.
  const pool = new pg.Pool({ connectionString: url });
  const saver = new PostgresSaver(pool);
  await saver.setup();
  const app = graph.compile({ checkpointer: saver });
  let thread = 0;
  const invoke = (durability: GraphDurability, n: number) => {
    const id = `t${thread++}`;
    return app
      .invoke({ i: 0, n, sum: 0 }, { configurable: { thread_id: id }, recursionLimit: n + 10, durability })
      .then((out) => {
        if (out.sum !== (n * (n - 1)) / 2) throw new Error(`LangGraph: wrong result ${out.sum}`);
        return id;
      });
  };
  const checkpoints = async (id: string) => {
    const { rows } = await pool.query<{ count: number }>(
      "SELECT count(*)::integer AS count FROM checkpoints WHERE thread_id = $1",
      [id],
    );
    return rows[0]?.count ?? 0;
  };
  return {
    label: `LangGraph ${version("@langchain/langgraph")} + PostgresSaver ${version("@langchain/langgraph-checkpoint-postgres")}`,
    async sequential(durability, steps, warmUp) {
      if (warmUp > 0) await invoke(durability, warmUp);
      const measured: number[] = [];
      graphGaps = measured;
      last = performance.now();
      const id = await invoke(durability, steps);
      graphGaps = undefined;
      if (measured.length !== steps) throw new Error(`LangGraph: ${measured.length} gaps for ${steps} steps`);
      const count = await checkpoints(id);
      if (count < steps) throw new Error(`LangGraph: ${count} checkpoints for ${steps} steps`);
      return measured;
    },
    async concurrent(durability, runs, steps) {
      const t0 = performance.now();
      const ids = await Promise.all(Array.from({ length: runs }, () => invoke(durability, steps)));
      const ms = performance.now() - t0;
      for (const id of ids) {
        const count = await checkpoints(id);
        if (count < steps) throw new Error(`LangGraph: ${count} checkpoints for ${steps} steps`);
      }
      return ms;
    },
    close: () => saver.end(),
  };
}
