import { performance } from "node:perf_hooks";
import { EventClient } from "./event-client.ts";
import { request, transitionsOf } from "./http.ts";
import { CLIENTS, deadline, FINAL, fmt, n, RATE, SECONDS, START_BODY, sleep, WARM_UP } from "./options.ts";

/** Before the load: warm-up runs, then the clients on the all-runs stream, each with its `ready`. */

/** A few runs one at a time, so the first second of the load is not the JIT's. */
export async function warmUp(base: string): Promise<void> {
  const warmIds: string[] = [];
  for (let i = 0; i < WARM_UP; i++) {
    const res = await request(base, "POST", "/api/runs", START_BODY);
    if (res.status !== 201) throw new Error(`warm-up: POST /api/runs answered ${res.status} ${res.body}`);
    warmIds.push((JSON.parse(res.body) as { run: { id: string } }).run.id);
  }
  for (const id of warmIds) {
    for (let i = 0; ; i++) {
      const ts = await transitionsOf(base, id);
      if (FINAL.has(ts.at(-1)?.to ?? "")) break;
      if (i > 200) throw new Error(`warm-up: run ${id} did not finish`);
      await sleep(50);
    }
  }
}

/** The clients, connecting (each its own connection): `clientsReady` waits for their `ready`. */
export function openClients(base: string): EventClient[] {
  return Array.from({ length: CLIENTS }, (_, i) => EventClient.open(base, i));
}

/** Waits until every client got its `ready` (30 s at most), then says so and what the load will be. */
export async function clientsReady(clients: EventClient[], tConnect: number): Promise<void> {
  const connected = await Promise.race([
    Promise.all(clients.map((c) => c.ready)).then(() => true),
    deadline(30_000).then(() => false),
  ]);
  if (!connected) {
    const notReady = clients.filter((c) => c.boot === undefined);
    throw new Error(
      `${notReady.length} of ${CLIENTS} clients got no ready event within 30 s (${notReady[0]?.dropped ?? "no error"})`,
    );
  }
  console.log(
    `${n(CLIENTS)} clients on GET /api/events, all ready in ${fmt(performance.now() - tConnect)} ms; ${n(WARM_UP)} warm-up runs done before`,
  );
  console.log(
    `load: POST /api/runs report_builder/build at ${RATE}/s for ${SECONDS} s, open loop (${n(RATE * SECONDS)} requests)\n`,
  );
}
