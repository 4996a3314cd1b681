/**
 * LangGraph JS with its SQLite checkpointer, many graphs at once: R threads of the one-node loop
 * of langgraph-peer.ts invoked together on one file, durability "sync" and synchronous=FULL (each
 * super-step's checkpoint on disk before the next, what Cairn's "machine" promises).
 * bench/sqlite-concurrent.ts measures it beside Cairn.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";

const State = Annotation.Root({
  i: Annotation<number>(),
  n: Annotation<number>(),
  sum: Annotation<number>(),
});

const graph = new StateGraph(State)
  .addNode("step", (s: typeof State.State) => ({ i: s.i + 1, sum: s.sum + s.i }))
  .addEdge(START, "step")
  .addConditionalEdges("step", (s: typeof State.State) => (s.i < s.n ? "step" : END), ["step", END]);

/** Opens the file; each `batch()` invokes `runs` graphs of `steps` steps together (ms). */
export async function concurrentPeer(file: string, runs: number, steps: number) {
  const saver = SqliteSaver.fromConnString(file);
  saver.db.pragma("synchronous = FULL");
  const app = graph.compile({ checkpointer: saver });
  let batchNo = 0;
  const expected = (steps * (steps - 1)) / 2;
  return {
    label: 'LangGraph + SqliteSaver (durability "sync", synchronous=FULL)',
    async batch(): Promise<number> {
      const b = batchNo++;
      const t0 = performance.now();
      const outs = await Promise.all(
        Array.from({ length: runs }, (_, r) =>
          app.invoke(
            { i: 0, n: steps, sum: 0 },
            { configurable: { thread_id: `b${b}-r${r}` }, recursionLimit: steps + 10, durability: "sync" },
          ),
        ),
      );
      const ms = performance.now() - t0;
      if (outs.some((o) => o.sum !== expected)) throw new Error("LangGraph: wrong result");
      return ms;
    },
    async close() {
      saver.db.close();
    },
  };
}
