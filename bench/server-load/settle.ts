import { performance } from "node:perf_hooks";
import type { EventClient } from "./event-client.ts";
import { eachLimited, transitionsOf } from "./http.ts";
import type { Start } from "./open-loop.ts";
import { FINAL, sleep, type Transition } from "./options.ts";

/** After the load: every started run to its end, then the clients caught up. */
export interface Settled {
  runIds: string[];
  /** Each finished run's transition log. */
  log: Map<string, Transition[]>;
  /** Runs not finished within 120 s. */
  unsettled: string[];
  lastCompletedAt: number;
  /** Transitions of the started runs each client is to receive: what their logs hold. */
  expectedPerClient: number;
  /** The transitions of the started runs a client received. */
  countOf: (c: EventClient) => number;
}

export async function settle(base: string, starts: Start[], clients: EventClient[]): Promise<Settled> {
  // Every started run to its end, read from its transition log.
  const runIds = starts.flatMap((s) => (s.runId ? [s.runId] : []));
  const log = new Map<string, Transition[]>();
  const tSettle = performance.now();
  let unsettled = runIds;
  while (unsettled.length > 0 && performance.now() - tSettle < 120_000) {
    const still: string[] = [];
    await eachLimited(unsettled, 16, async (id) => {
      const ts = await transitionsOf(base, id);
      if (FINAL.has(ts.at(-1)?.to ?? "")) log.set(id, ts);
      else still.push(id);
    });
    unsettled = still;
    if (unsettled.length > 0) await sleep(250);
  }
  const lastCompletedAt = Math.max(...[...log.values()].map((ts) => ts.at(-1)?.at ?? 0));
  const expectedPerClient = runIds.reduce((sum, id) => sum + (log.get(id)?.length ?? 0), 0);

  // The clients catch up: until each has as many transitions of these runs as the logs hold, or 10 s without news.
  const startedSet = new Set(runIds);
  const countOf = (c: EventClient) => {
    let sum = 0;
    for (const [id, ids] of c.runs) if (startedSet.has(id)) sum += ids.length;
    return sum;
  };
  let lastTotal = -1;
  let lastChange = performance.now();
  for (;;) {
    const counts = clients.map(countOf);
    if (counts.every((c) => c >= expectedPerClient)) break;
    const sum = counts.reduce((a, b) => a + b, 0);
    if (sum !== lastTotal) {
      lastTotal = sum;
      lastChange = performance.now();
    } else if (performance.now() - lastChange > 10_000) break;
    await sleep(100);
  }
  await sleep(500); // anything late (a duplicate) still arrives to be counted
  return { runIds, log, unsettled, lastCompletedAt, expectedPerClient, countOf };
}
