/**
 * LangGraph JS 1.x with its SQLite checkpointer: a StateGraph of one node that loops to itself
 * through a conditional edge until it has run N times. Every node execution is one super-step,
 * and LangGraph saves the task's writes and a checkpoint of the whole state after each one.
 *
 * The gaps are taken at the node's entry (a node cannot observe its own checkpoint): from one
 * node execution to the next is one full super-step — run the node, save its writes, save the
 * checkpoint, plan the next task. The first gap runs from just before `invoke`.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import type { Peer } from "./peer.ts";

type Durability = "sync" | "async";
type Synchronous = "FULL" | "NORMAL";

const State = Annotation.Root({
  i: Annotation<number>(),
  n: Annotation<number>(),
  sum: Annotation<number>(),
});

/** Per-step gaps (µs), recorded only during the measured run (not the warm-up). */
let gaps: number[] | undefined;
let last = 0;

const graph = new StateGraph(State)
  .addNode("step", (s: typeof State.State) => {
    const now = performance.now();
    gaps?.push((now - last) * 1000);
    last = now;
    return { i: s.i + 1, sum: s.sum + s.i };
  })
  .addEdge(START, "step")
  .addConditionalEdges("step", (s: typeof State.State) => (s.i < s.n ? "step" : END), ["step", END]);

async function round(durability: Durability, synchronous: Synchronous, steps: number, warmUp: number) {
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-langgraph-"));
  const saver = SqliteSaver.fromConnString(join(dir, "checkpoints.db"));
  try {
    // Set before the saver switches the file to WAL, so SQLite's WAL default does not apply.
    saver.db.pragma(`synchronous = ${synchronous}`);
    const app = graph.compile({ checkpointer: saver });
    const invoke = (thread: string, n: number) =>
      app.invoke({ i: 0, n, sum: 0 }, { configurable: { thread_id: thread }, recursionLimit: n + 10, durability });
    await invoke("warm-up", warmUp);
    const measured: number[] = [];
    gaps = measured;
    last = performance.now();
    const out = await invoke("measured", steps);
    gaps = undefined;
    if (measured.length !== steps) throw new Error(`LangGraph: ${measured.length} gaps for ${steps} steps`);
    if (out.sum !== (steps * (steps - 1)) / 2) throw new Error(`LangGraph: wrong result ${out.sum}`);
    const effective = saver.db.pragma("synchronous", { simple: true });
    if (effective !== (synchronous === "FULL" ? 2 : 1)) throw new Error(`LangGraph: synchronous is ${effective}`);
    const { count } = saver.db
      .prepare("SELECT count(*) AS count FROM checkpoints WHERE thread_id = ?")
      .get("measured") as { count: number };
    if (count < steps) throw new Error(`LangGraph: ${count} checkpoints for ${steps} steps`);
    return measured;
  } finally {
    saver.db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function peers(): Promise<Peer[]> {
  const version = (name: string) =>
    JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), "utf8")).version;
  const label = (durability: Durability, synchronous: Synchronous) =>
    `LangGraph ${version("@langchain/langgraph")} + SqliteSaver ${version("@langchain/langgraph-checkpoint-sqlite")}` +
    ` (durability "${durability}", synchronous=${synchronous})`;
  // "sync" with FULL is what cairn's "machine" promises (the step is on disk before the next one
  // starts); "async" is LangGraph's default; "sync" with NORMAL matches cairn's "process".
  const variants: [Durability, Synchronous][] = [
    ["sync", "FULL"],
    ["async", "FULL"],
    ["sync", "NORMAL"],
  ];
  return variants.map(([durability, synchronous]) => ({
    label: label(durability, synchronous),
    note:
      "LangGraph: each step is a super-step that saves the task's writes, then a checkpoint of the whole graph state" +
      " (two SQLite commits, in process).",
    run: (steps, warmUp) => round(durability, synchronous, steps, warmUp),
  }));
}
