import type { DbosPeer } from "../peers/postgres-peer-types.ts";
import { bench } from "./bench-agent.ts";
import { clientRuntime } from "./cairn-systems.ts";
import { Child } from "./child.ts";
import { now } from "./ipc.ts";

/** How long a signal takes to wake a parked run in another process: Cairn's, and DBOS's. */

export interface SignalFigures {
  running: number[];
  resumed: number[];
  returned: number[];
  completed: number[];
  clock: { offset: number; rtt: number };
}

/** Lets the worker sit idle `gapMs` before a signal (0: back-to-back). */
const idle = (gapMs: number) => (gapMs > 0 ? new Promise((r) => setTimeout(r, gapMs)) : undefined);

/** Parks runs in a worker process, signals them one at a time from this process, `gapMs` apart. */
export async function cairnSignalLatency(
  url: string,
  schema: string,
  count: number,
  warmUp: number,
  gapMs: number,
): Promise<SignalFigures> {
  const client = await clientRuntime(url, schema);
  const worker = new Child("worker", ["--url", url, "--schema", schema]);
  try {
    await worker.next("ready");
    const clock = await worker.clockOffset();
    const total = count + warmUp;
    for (let i = 0; i < total; i++) await client.run(bench, "park", { i });
    for (;;) {
      const paused = await client.listRuns({ state: "PAUSED", workflow: "park", limit: total });
      if (paused.length === total) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const ids = (await client.listRuns({ state: "PAUSED", workflow: "park", limit: total })).map((r) => r.id);
    const figures: SignalFigures = { running: [], resumed: [], returned: [], completed: [], clock };
    for (const [n, id] of ids.entries()) {
      const running = worker.next("running", (m) => m.id === id);
      const resumed = worker.next("resumed", (m) => m.id === id);
      const completed = worker
        .next("completed", (m) => m.runs.some((r) => r.id === id))
        .then((m) => m.runs.find((r) => r.id === id) as { id: string; at: number });
      await idle(gapMs);
      const t0 = now();
      await client.signal(id, "go", { ok: true });
      const returned = now();
      const [r, s, c] = await Promise.all([running, resumed, completed]);
      if (n < warmUp) continue;
      figures.running.push(r.at - t0);
      figures.resumed.push(s.at - t0);
      figures.returned.push(returned - t0);
      figures.completed.push(c.at - t0);
    }
    return figures;
  } finally {
    await worker.stop();
    await client.shutdown();
  }
}

/** Workflows in `DBOS.recv` in this process, `DBOSClient.send` from a child process. */
export async function dbosSignalLatency(dbos: DbosPeer, count: number, warmUp: number, gapMs: number) {
  const sender = new Child("dbos-sender", ["--url", dbos.url]);
  try {
    await sender.next("ready");
    const clock = await sender.clockOffset();
    const ids = await dbos.park(count + warmUp);
    await dbos.settled(ids);
    const received: number[] = [];
    const returned: number[] = [];
    for (const [n, id] of ids.entries()) {
      const got = dbos.received(id);
      const sent = sender.next("sent", (m) => m.id === id);
      await idle(gapMs);
      sender.send({ kind: "send", id });
      const [at, s] = await Promise.all([got, sent]);
      if (n < warmUp) continue;
      received.push(at - s.calledAt);
      returned.push(s.returnedAt - s.calledAt);
    }
    return { received, returned, clock };
  } finally {
    await sender.stop();
  }
}
