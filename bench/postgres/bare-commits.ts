import { randomBytes } from "node:crypto";
import pg from "pg";
import type { Series } from "./figures.ts";
import { cpuMs } from "./ipc.ts";
import { databaseOf, serverCpu, serverCpuSpent } from "./server-cpu.ts";

/** The bare cost of a commit, measured over one pg connection in a fresh schema. */
export async function bareCommits(url: string, count: number, warmUp: number): Promise<Series[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const schema = `bare_${randomBytes(3).toString("hex")}`;
  try {
    await client.query(`CREATE SCHEMA ${schema}`);
    await client.query(`CREATE TABLE ${schema}.t (id bigserial PRIMARY KEY, v text NOT NULL)`);
    const insert = { name: "bare-insert", text: `INSERT INTO ${schema}.t (v) VALUES ($1)` };
    const row = (i: number) => ({ ...insert, values: [`{"seq":${i},"result":${i}}`] });
    // In this order: the last one turns synchronous commits off for the session.
    const variants: [string, (i: number) => Promise<unknown>, string?][] = [
      ["bare commit: INSERT, autocommit, synchronous_commit=on", (i) => client.query(row(i))],
      [
        "bare commit: BEGIN; INSERT; COMMIT (3 round trips)",
        async (i) => {
          await client.query("BEGIN");
          await client.query(row(i));
          await client.query("COMMIT");
        },
      ],
      [
        "INSERT, autocommit, synchronous_commit=off (no flush)",
        (i) => client.query(row(i)),
        "SET synchronous_commit = off",
      ],
    ];
    const out: Series[] = [];
    for (const [name, commit, setup] of variants) {
      if (setup) await client.query(setup);
      for (let i = 0; i < warmUp; i++) await commit(i);
      const us: number[] = [];
      const server0 = await serverCpu(databaseOf(url));
      const cpu0 = cpuMs();
      for (let i = 0; i < count; i++) {
        const t0 = performance.now();
        await commit(i);
        us.push((performance.now() - t0) * 1000);
      }
      const cpuUs = ((cpuMs() - cpu0) * 1000) / count;
      const serverUs = (serverCpuSpent(server0, await serverCpu(databaseOf(url))) * 1000) / count;
      out.push({ name, us, cpuUs, serverUs });
    }
    return out;
  } finally {
    await client.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => undefined);
    await client.end();
  }
}
