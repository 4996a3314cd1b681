import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runtime, silentLogger } from "../src/index.ts";
import { PostgresBackend } from "../src/postgres.ts";
import { startTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { ticker } from "./schedule-crash/ticker-agent.ts";

/**
 * A schedule with a 1 s interval on PostgreSQL while its worker processes are SIGKILLed and
 * restarted (issue 28): 3 worker processes (test/schedule-crash/worker-child.ts); for 15 s a
 * worker that is up is killed every 1.2 s while another one is up, and started again at once; then all are killed, none runs for 4 s,
 * and 2 start again. Two schedules: `all` catches up every missed tick, `latest` only the last.
 *
 * Counted from the runs table: every tick of `all` from its first to its last has exactly one
 * run (none missing, none twice), the ticks of the 4 s without a worker included, their runs
 * created after the restart; `latest` fires at most the last tick of those 4 s (its catch-up
 * fires the tick last due when the first worker is back: the one just before the restart, or the
 * first after it when the worker takes over a second to start) and goes on after it.
 */

const CHILD = join(import.meta.dirname, "schedule-crash", "worker-child.ts");
const SCHEMA = "sched_crash";
let db: TestDatabase | undefined;

beforeAll(async () => {
  db = await startTestDatabase();
}, 60_000);
afterAll(async () => {
  await db?.close();
});

interface Child {
  proc: ChildProcessWithoutNullStreams;
  ready: Promise<void>;
  exited: Promise<unknown>;
  out: string[];
}

function startWorker(url: string): Child {
  const proc = spawn(process.execPath, ["--import", "tsx", CHILD, url, SCHEMA]);
  const out: string[] = [];
  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  proc.stdout.on("data", (d) => {
    for (const line of String(d).split("\n")) {
      if (line) out.push(line);
      if (line.startsWith("ready ")) onReady();
    }
  });
  proc.stderr.on("data", (d) => out.push(`stderr ${d}`));
  return { proc, ready, out, exited: new Promise((resolve) => proc.on("close", resolve)) };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function kill(child: Child): Promise<void> {
  child.proc.kill("SIGKILL");
  await child.exited;
}

describe("schedules across worker processes killed and restarted (PostgreSQL)", () => {
  it("starts exactly one run per tick and catches up as each policy says", async () => {
    const url = (db as TestDatabase).url;
    const client = new Runtime({
      agents: [ticker],
      backend: new PostgresBackend({ connectionString: url, schema: SCHEMA }),
      worker: false,
      logger: silentLogger,
    });
    await client.start();
    const common = { agent: "ticker", workflow: "tick", every: "1s", overlap: "allow" } as const;
    await client.schedule({ ...common, id: "all", catchUp: "all", catchUpLimit: 100 });
    await client.schedule({ ...common, id: "latest", catchUp: "latest" });

    let workers = [startWorker(url), startWorker(url), startWorker(url)];
    await Promise.all(workers.map((w) => w.ready));
    // Kill a worker that is up every 1.2 s, as long as another one is up too, and start it again.
    let kills = 0;
    const started = Date.now();
    const isUp = new Map<Child, boolean>();
    const track = (w: Child) => {
      isUp.set(w, false);
      void w.ready.then(() => isUp.set(w, true));
      return w;
    };
    for (const w of workers) track(w);
    await Promise.all(workers.map((w) => w.ready));
    while (Date.now() - started < 15_000) {
      await sleep(1200);
      const up = workers.filter((w) => isUp.get(w));
      if (up.length < 2) continue;
      const victim = up[kills % up.length] as Child;
      await kill(victim);
      kills += 1;
      workers[workers.indexOf(victim)] = track(startWorker(url));
    }
    await Promise.all(workers.map(kill));
    const downAt = Date.now();
    await sleep(4000);
    const upAt = Date.now();
    workers = [startWorker(url), startWorker(url)];
    await Promise.all(workers.map((w) => w.ready));
    await sleep(3000);
    for (const w of workers) w.proc.kill("SIGTERM");
    await Promise.all(workers.map((w) => w.exited));
    await client.shutdown();

    const { rows } = await (db as TestDatabase).query<{ schedule: string; tick: string; n: string; created: string }>(
      `SELECT meta->>'schedule' AS schedule, meta->>'scheduledFor' AS tick, count(*) AS n, min(created_at) AS created
         FROM ${SCHEMA}.runs WHERE agent = 'ticker' GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    const of = (id: string) =>
      rows
        .filter((r) => r.schedule === id)
        .map((r) => ({ tick: Date.parse(r.tick), n: Number(r.n), created: Number(r.created) }));
    const all = of("all");
    const latest = of("latest");
    const first = all[0]?.tick as number;
    const last = all.at(-1)?.tick as number;
    const expected = Array.from({ length: (last - first) / 1000 + 1 }, (_, i) => first + i * 1000);
    console.log(
      `schedule crash: ${kills} kills, then ${downAt - started} ms of kills and ${upAt - downAt} ms with no worker; ` +
        `"all" ${all.length} runs over ${expected.length} ticks, "latest" ${latest.length} runs`,
    );
    expect(kills).toBeGreaterThanOrEqual(3);
    expect(all.every((r) => r.n === 1)).toBe(true);
    expect(latest.every((r) => r.n === 1)).toBe(true);
    expect(all.map((r) => r.tick)).toEqual(expected);
    expect(expected.length).toBeGreaterThanOrEqual(18);
    const down = all.filter((r) => r.tick > downAt + 1000 && r.tick < upAt);
    expect(down.length).toBeGreaterThanOrEqual(2);
    expect(down.every((r) => r.created >= upAt)).toBe(true);
    // `latest` fires one tick of the outage at most: the last one due when a worker is back, which
    // is the tick just before the restart when a worker is ready within a second (it may also be
    // the first one after it). None of the earlier ticks of the outage fires.
    expect(latest.filter((r) => r.tick > downAt + 1000 && r.tick < upAt - 1000)).toEqual([]);
    expect(latest.filter((r) => r.tick > downAt + 1000 && r.tick < upAt).length).toBeLessThanOrEqual(1);
    expect(latest.filter((r) => r.tick >= upAt).length).toBeGreaterThanOrEqual(1);
    expect(latest.filter((r) => r.tick < downAt).length).toBeGreaterThanOrEqual(5);
  }, 90_000);
});
