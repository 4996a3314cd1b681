/**
 * DBOS Transact (TypeScript SDK 5.x) on PostgreSQL: a registered workflow whose every step is a
 * `DBOS.runStep`, checkpointed in the system database (one INSERT … COMMIT per step) before the
 * workflow goes on. Each round creates its own database on the server (CAIRN_BENCH_PG_URL, or
 * postgresql://postgres@127.0.0.1:5432/postgres) and drops it afterwards.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { DBOS } from "@dbos-inc/dbos-sdk";
import pg from "pg";
import type { Peer } from "./peer.ts";

const SERVER_URL = process.env.CAIRN_BENCH_PG_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

/** Per-step gaps (µs) recorded inside the measured workflow (not the warm-up), as Cairn's are. */
let gaps: number[] | undefined;

async function noop(i: number): Promise<number> {
  return i;
}

const stepsWorkflow = DBOS.registerWorkflow(
  async (n: number): Promise<number> => {
    let sum = 0;
    let last = performance.now();
    for (let i = 0; i < n; i++) {
      sum += await DBOS.runStep(() => noop(i), { name: "noop" });
      const now = performance.now();
      gaps?.push((now - last) * 1000);
      last = now;
    }
    return sum;
  },
  { name: "cairnBenchSteps" },
);

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: SERVER_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function round(steps: number, warmUp: number): Promise<number[]> {
  const database = `cairn_bench_dbos_${randomBytes(4).toString("hex")}`;
  const url = new URL(SERVER_URL);
  url.pathname = `/${database}`;
  await admin((c) => c.query(`CREATE DATABASE "${database}"`));
  let launched = false;
  try {
    DBOS.setConfig({
      name: "cairn-bench",
      applicationVersion: "bench",
      systemDatabaseUrl: url.toString(),
      logLevel: "error",
    });
    await DBOS.launch();
    launched = true;
    await stepsWorkflow(warmUp);
    const measured: number[] = [];
    gaps = measured;
    const handle = await DBOS.startWorkflow(stepsWorkflow)(steps);
    const sum = await handle.getResult();
    gaps = undefined;
    if (measured.length !== steps) throw new Error(`DBOS: ${measured.length} gaps for ${steps} steps`);
    if (sum !== (steps * (steps - 1)) / 2) throw new Error(`DBOS: wrong result ${sum}`);
    const recorded = await DBOS.listWorkflowSteps(handle.workflowID);
    if (recorded?.length !== steps) throw new Error(`DBOS: ${recorded?.length} steps checkpointed, not ${steps}`);
    return measured;
  } finally {
    if (launched) await DBOS.shutdown();
    await admin((c) => c.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`));
  }
}

/** One peer, labelled with the SDK's version and the server's commit durability (read from it). */
export async function peers(): Promise<Peer[]> {
  const version = JSON.parse(
    readFileSync(new URL("./node_modules/@dbos-inc/dbos-sdk/package.json", import.meta.url), "utf8"),
  ).version;
  const settings = await admin(async (c) => {
    const show = async (name: string) => (await c.query(`SHOW ${name}`)).rows[0]?.[name] as string;
    return {
      server: (await show("server_version")).split(" ")[0],
      synchronousCommit: await show("synchronous_commit"),
      fsync: await show("fsync"),
    };
  });
  const durability = `synchronous_commit=${settings.synchronousCommit}${settings.fsync === "on" ? "" : ", fsync=off"}`;
  return [
    {
      label: `DBOS ${version} on PostgreSQL ${settings.server} (${durability})`,
      note: "DBOS: each step is one PostgreSQL transaction (INSERT … COMMIT), over TCP to a server process on this machine.",
      run: round,
    },
  ];
}
