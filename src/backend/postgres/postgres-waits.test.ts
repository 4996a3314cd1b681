import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startTestDatabase, type TestDatabase } from "../../../test/helpers/postgres.ts";
import { backendsPerTest } from "../../../test/helpers/postgres-backends-per-test.ts";
import { until } from "../../../test/helpers/runtime-helpers.ts";
import type { RunRecord, WaitRecord } from "../../core/records.ts";
import {
  endRun,
  LEASE_MS,
  pausedRun,
  runningRun,
  suspendRequest,
  T0,
  VERSIONS,
  waitRecord,
} from "../conformance/conformance-fixtures.ts";
import { PostgresBackend } from "./postgres-backend.ts";

/** Waits on PostgreSQL (`postgres-waits.ts`), alone and under concurrency. */

// One database per test file (embedded PostgreSQL, or CAIRN_TEST_DATABASE_URL's server), and one
// schema per backend under test, so nothing here sees another test's rows.
let db: TestDatabase;

beforeAll(async () => {
  db = await startTestDatabase();
});

afterAll(async () => {
  await db?.close();
});

describe("PostgresBackend", () => {
  const { open } = backendsPerTest(() => db);

  it("passes what a resolveWait decision throws to the caller as it is, and writes nothing", async () => {
    const backend = await open();
    const { run } = await pausedRun(backend, [{ seq: 1, kind: "user", name: "Which region?" }], {
      pausedReason: "awaiting_user",
    });
    const thrown = new TypeError("schema check blew up");
    const error = await backend
      .resolveWait({
        runId: run.id,
        waitId: "w1",
        decide: () => {
          throw thrown;
        },
        actor: { kind: "user", id: "alice" },
        reason: "answered",
        versions: VERSIONS,
        at: T0 + 500,
      })
      .catch((e: unknown) => e);
    expect(error).toBe(thrown);
    expect((await backend.loadWaits(run.id))[0]?.status).toBe("open");
    expect((await backend.getRun(run.id))?.state).toBe("PAUSED");
  });
});

describe("PostgresBackend waits under concurrency", () => {
  const opened: PostgresBackend[] = [];
  let schema = "";

  /** `count` backends (pools) on one fresh schema: separate connections, truly concurrent. */
  async function pools(count: number, max = 4): Promise<PostgresBackend[]> {
    schema = db.schema();
    for (let i = 0; i < count; i++) {
      const backend = new PostgresBackend({ connectionString: db.url, schema, max });
      await backend.init();
      opened.push(backend);
    }
    return opened.slice(-count);
  }

  afterEach(async () => {
    for (const backend of opened.splice(0)) await backend.close();
    await db.dropSchema(schema);
  });

  it("ends runs, their parents and their children at the same moment without a deadlock", async () => {
    // One backend per end, so that each end is a transaction of its own (a backend batches the
    // transitions it is asked for at once: see the next test).
    const ending = await pools(15, 2);
    const a = ending[0] as PostgresBackend;
    // Families of three generations, every run RUNNING under its own worker. An end locks the
    // run, its parent and its open children, all in id order, while the top runs are held below so
    // that the ends pile up. Were the run itself locked first, the middle end would hold the middle
    // run while waiting for the top one, the bottom end would wait for the middle run while holding
    // the bottom one, and the middle end would then wait for the bottom one: a deadlock.
    const families: RunRecord[][] = [];
    for (let i = 0; i < 5; i++) {
      const top = await runningRun(a, { workerId: "w1" });
      const middle = await runningRun(a, { workerId: "w2", overrides: { parentRunId: top.id } });
      const bottom = await runningRun(a, {
        workerId: "w3",
        overrides: { parentRunId: middle.id, parentClosePolicy: "cancel" },
      });
      families.push([top, middle, bottom]);
    }
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    let settled: PromiseSettledResult<unknown>[];
    try {
      await holder.query("BEGIN");
      const tops = families.map(([top]) => (top as RunRecord).id);
      await holder.query(`SELECT id FROM ${pg.escapeIdentifier(schema)}.runs WHERE id = ANY ($1) FOR UPDATE`, [tops]);
      const ends = Promise.allSettled(
        families.flatMap(([top, middle, bottom], i) => [
          endRun(ending[3 * i] as PostgresBackend, middle as RunRecord),
          endRun(ending[3 * i + 1] as PostgresBackend, bottom as RunRecord),
          endRun(ending[3 * i + 2] as PostgresBackend, top as RunRecord),
        ]),
      );
      await until(async () => {
        const waiting = await db.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        );
        return (waiting.rows[0]?.n ?? 0) >= 2 * families.length;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await holder.query("COMMIT");
      settled = await ends;
    } finally {
      await holder.end();
    }
    expect(settled.filter((r) => r.status === "rejected")).toEqual([]);
    for (const run of families.flat()) {
      expect((await a.getRun(run.id))?.state).toBe("COMPLETED");
      expect((await a.listTransitions(run.id)).map((t) => t.to)).toEqual(["PENDING", "RUNNING", "COMPLETED"]);
    }
  });

  it("renews the leases of a parent and a child while the child ends, without a deadlock", async () => {
    const [a, b] = (await pools(2)) as [PostgresBackend, PostgresBackend];
    // The child's row first: a renewal that does not sort would meet it first, in the array and
    // in the table alike.
    const child = await runningRun(a, { workerId: "w1", overrides: { id: "fam-b", parentRunId: "fam-a" } });
    const parent = await runningRun(a, { workerId: "w1", overrides: { id: "fam-a" } });
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    const lockWaits = async () =>
      (
        await db.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
      ).rows[0]?.n ?? 0;
    try {
      // The child's end waits for the parent (held here) before it locks anything; a renewal that
      // locked the child first and then waited for the parent would close a cycle with it.
      await holder.query("BEGIN");
      await holder.query(`SELECT id FROM ${pg.escapeIdentifier(schema)}.runs WHERE id = $1 FOR UPDATE`, [parent.id]);
      const end = endRun(a, child).then(
        () => "ended",
        (e: unknown) => e,
      );
      await until(async () => (await lockWaits()) >= 1);
      const renew = b
        .renewLeases({
          workerId: "w1",
          now: T0 + 10,
          leaseMs: LEASE_MS,
          runs: [
            { runId: child.id, epoch: child.epoch },
            { runId: parent.id, epoch: parent.epoch },
          ],
        })
        .catch((e: unknown) => e);
      await until(async () => (await lockWaits()) >= 2);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await holder.query("COMMIT");
      expect(await end).toBe("ended");
      expect(await renew).toEqual([child.id]);
    } finally {
      await holder.end();
    }
  });

  it("fires each due wait once when several workers fire at the same time", async () => {
    const backends = await pools(3);
    const first = backends[0] as PostgresBackend;
    const runs: RunRecord[] = [];
    for (let i = 0; i < 30; i++) {
      const { run } = await pausedRun(first, [{ seq: 1, kind: "timer", name: "sleep", dueAt: T0 + 500 + (i % 5) }], {
        pausedReason: "awaiting_timer",
      });
      runs.push(run);
    }
    const fired: WaitRecord[] = [];
    await Promise.all(
      backends.map(async (backend) => {
        for (;;) {
          const batch = await backend.fireDueWaits(T0 + 1_000, 4);
          if (batch.length === 0) return;
          fired.push(...batch);
        }
      }),
    );
    fired.push(...(await first.fireDueWaits(T0 + 1_000, 100)));
    expect(fired).toHaveLength(30);
    expect(new Set(fired.map((w) => w.runId))).toEqual(new Set(runs.map((r) => r.id)));
    for (const run of runs) {
      const transitions = await first.listTransitions(run.id);
      expect(transitions.map((t) => t.to)).toEqual(["PENDING", "RUNNING", "PAUSED", "RESUMING"]);
    }
    expect(await first.nextDueAt()).toBeNull();
  });

  it("never loses a child's end that races its parent's pause on it", async () => {
    const [a, b] = (await pools(2)) as [PostgresBackend, PostgresBackend];
    for (let i = 0; i < 10; i++) {
      const parent = await runningRun(a, { workerId: "w1" });
      const child = await runningRun(a, { workerId: "w2", overrides: { parentRunId: parent.id } });
      const wait = waitRecord(parent.id, 1, { kind: "child", name: child.id, details: { childRunId: child.id } });
      const [suspended] = await Promise.all([
        a.suspend(suspendRequest(parent, [wait], { pausedReason: "awaiting_child" })),
        endRun(b, child),
      ]);
      const [stored] = await a.loadWaits(parent.id);
      expect(stored).toMatchObject({ status: "resolved", resolution: { outcome: "child_ended" } });
      // Either the child had ended (not paused) or its end woke the paused parent.
      expect((await a.getRun(parent.id))?.state).toBe(suspended.paused ? "RESUMING" : "RUNNING");
    }
  });

  it("sends a stop wake-up to another process, and lets a worker find the request", async () => {
    const [a, b] = (await pools(2)) as [PostgresBackend, PostgresBackend];
    const heard: string[] = [];
    const unsubscribe = await a.subscribe((wake) =>
      heard.push("runId" in wake ? `${wake.kind}:${wake.runId}` : wake.kind),
    );
    try {
      const run = await runningRun(b, { workerId: "w7" });
      await b.requestStop({
        runId: run.id,
        request: { kind: "suspend", by: { kind: "user", id: "op" }, reason: "pause it", at: T0 + 10 },
        versions: VERSIONS,
      });
      await until(() => heard.includes(`stop:${run.id}`), { what: "stop wake-up" });
      expect(await a.listStopRequested("w7")).toEqual([run.id]);
      expect(await a.listStopRequested("w8")).toEqual([]);
    } finally {
      await unsubscribe();
    }
  });
});
