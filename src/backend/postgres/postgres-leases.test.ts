import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestDatabase, type TestDatabase } from "../../../test/helpers/postgres.ts";
import { backendsPerTest } from "../../../test/helpers/postgres-backends-per-test.ts";
import { LeaseLostError } from "../../core/errors.ts";
import type { RunRecord } from "../../core/records.ts";
import {
  fullStep,
  LEASE_MS,
  move,
  newRun,
  runInput,
  runningRun,
  startedStep,
  T0,
  VERSIONS,
} from "../conformance/conformance-fixtures.ts";
import { applyTransition } from "../rules/transition-rules.ts";
import { statements } from "./postgres-statements.ts";

/** Claims and leases on PostgreSQL (`postgres-leases.ts`, the batch claim in `batching/`). */

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

  it("hands each of 100 runs to exactly one of 4 pools claiming concurrently", async () => {
    const schema = db.schema();
    const pools = [await open({ schema, max: 3 })];
    for (let i = 1; i < 4; i++) pools.push(await open({ schema, max: 3 }));
    const ids = new Set<string>();
    for (let i = 0; i < 100; i++) ids.add((await pools[i % 4]?.createRun(runInput({ at: T0 + i })))?.run.id ?? "");

    // Three claim loops per pool: twelve claimers racing over the same rows.
    const got = await Promise.all(
      pools.flatMap((backend, p) =>
        [0, 1, 2].map(async (loop) => {
          const workerId = `p${p}-l${loop}`;
          const mine: RunRecord[] = [];
          for (;;) {
            const run = await backend.claimRun({ workerId, now: T0 + 1_000, leaseMs: LEASE_MS });
            if (!run) return mine;
            mine.push(run);
          }
        }),
      ),
    );
    const all = got.flat();
    expect(all).toHaveLength(100);
    expect(new Set(all.map((r) => r.id))).toEqual(ids);
    expect(got.filter((mine) => mine.length > 0).length).toBeGreaterThanOrEqual(2);
    for (const run of all) expect(run.epoch).toBe(1);
    const stored = await pools[0]?.listRuns({ limit: 200 });
    const owners = new Map(all.map((r) => [r.id, r.leaseOwner]));
    for (const run of stored ?? []) expect(run.leaseOwner).toBe(owners.get(run.id));
  });

  it("finds claims of PENDING runs whose lease lapsed without reading a backlog of PENDING runs", async () => {
    const backend = await open();
    const q = pg.escapeIdentifier(backend.schema);
    // A backlog of 100,000 PENDING runs nobody has claimed, and one claimed whose worker is gone.
    await db.query(
      `INSERT INTO ${q}.runs (id, agent, workflow, state, input, epoch, recoveries, last_transition_id, versions, meta, created_at, updated_at,
                              lease_owner, lease_expires_at)
       SELECT 'r' || lpad(g::text, 6, '0'), 'a', 'w', 'PENDING', '{}', CASE WHEN g = 7 THEN 1 ELSE 0 END, 0, 1, '{}', '{}', g, g,
              CASE WHEN g = 7 THEN 'gone:1:x' END, CASE WHEN g = 7 THEN 5 END
       FROM generate_series(1, 100000) AS g`,
    );
    await db.query(`ANALYZE ${q}.runs`);
    expect((await backend.listExpiredLeases(10, 100)).map((r) => r.id)).toEqual(["r000007"]);
    const { rows } = await db.query(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statements(backend.schema).listExpired.text}`,
      [10, 100],
    );
    type Plan = { "Shared Hit Blocks": number; "Shared Read Blocks": number };
    const plan = ((rows[0]?.["QUERY PLAN"] ?? []) as { Plan: Plan }[])[0]?.Plan;
    const pages = (
      await db.query<{ relpages: number }>(`SELECT relpages FROM pg_class WHERE oid = '${q}.runs'::regclass`)
    ).rows[0]?.relpages;
    expect((plan?.["Shared Hit Blocks"] ?? 0) + (plan?.["Shared Read Blocks"] ?? 0)).toBeLessThan((pages ?? 0) / 10);
  });

  it("claims with start: the PENDING runs go RUNNING in the claim's statement, as the shared rule moves them; other runs are leased only", async () => {
    const backend = await open();
    const fresh = [await newRun(backend, { at: T0 }), await newRun(backend, { at: T0 + 1 })];
    // A PENDING run of an agent the claim names no versions for.
    const unnamed = await newRun(backend, { at: T0 + 2, agent: "other_agent" });
    // A run whose worker was lost: INTERRUPTED, then RESUMING with its lease let go.
    const lost = await runningRun(backend, { now: T0 + 3, overrides: { at: T0 + 3 } });
    const { run: interrupted } = await backend.transition(
      move(lost, "RUNNING", "INTERRUPTED", { patch: { releaseLease: true } }),
    );
    await backend.transition(move(interrupted, "INTERRUPTED", "RESUMING"));
    const otherVersions = { ...VERSIONS, workflow: "wf-other" };
    const start = {
      actor: { kind: "worker", id: "w2" } as const,
      reason: "claimed by worker w2",
      versions: { report_builder: VERSIONS, unused: otherVersions },
    };
    const now = T0 + 5_000;
    const claimed = await backend.claimRuns({ workerId: "w2", now, leaseMs: LEASE_MS, limit: 10, start });
    expect(claimed.map((c) => c.run.id)).toEqual([...fresh.map((r) => r.id), unnamed.id, lost.id]);
    for (const [i, { run, started }] of claimed.slice(0, 2).entries()) {
      // What `transition` would have written for the same move, by the rule every backend shares.
      const leased = { ...(fresh[i] as RunRecord), epoch: 1, leaseOwner: "w2", leaseExpiresAt: now + LEASE_MS };
      const expected = applyTransition(leased, {
        runId: leased.id,
        from: "PENDING",
        to: "RUNNING",
        at: now,
        fence: { epoch: 1 },
        actor: start.actor,
        reason: start.reason,
        versions: VERSIONS,
      });
      expect(run).toEqual(expected.run);
      expect(started).toEqual(expected.transition);
      expect(await backend.listTransitions(run.id)).toEqual([expect.objectContaining({ to: "PENDING" }), started]);
      expect(await backend.getRun(run.id)).toEqual(run);
    }
    // The run of an agent without versions, and the run claimed in RESUMING, are leased, not moved:
    // their worker records RUNNING (or FAILED, for an unknown agent) itself.
    for (const [c, state] of [
      [claimed[2], "PENDING"],
      [claimed[3], "RESUMING"],
    ] as const) {
      expect(c?.started).toBeUndefined();
      expect([c?.run.state, c?.run.leaseOwner]).toEqual([state, "w2"]);
      expect((await backend.listTransitions(c?.run.id ?? "")).at(-1)?.to).toBe(state);
    }
    // The feed holds each new transition once, after the run's earlier ones. It shows entries only
    // as far as the oldest transaction still open on the server (the snapshot's xmin), and other
    // test files share the server: read until the claim's entries are within that horizon.
    const ids = async (runId: string) =>
      (await backend.listTransitionsSince({ after: null, limit: 100 })).transitions
        .filter((e) => e.transition.runId === runId)
        .map((e) => e.transition.id);
    for (const { run } of claimed.slice(0, 2)) {
      await vi.waitFor(async () => expect(await ids(run.id)).toEqual([1, 2]), { timeout: 10_000, interval: 50 });
    }
    // A PENDING run whose last transition the claim's statement cannot see (one that committed
    // after the statement began, as a row counter ahead of the transitions read leaves it) is
    // leased only: its RUNNING transition would get a feed key below that transition's.
    const q = pg.escapeIdentifier(backend.schema);
    const raced = await newRun(backend, { at: T0 + 6 });
    await db.query(`UPDATE ${q}.runs SET last_transition_id = 2 WHERE id = $1`, [raced.id]);
    const [late] = await backend.claimRuns({ workerId: "w3", now, leaseMs: LEASE_MS, limit: 10, start });
    expect([late?.run.id, late?.run.state, late?.run.leaseOwner, late?.started]).toEqual([
      raced.id,
      "PENDING",
      "w3",
      undefined,
    ]);
    // The RUNNING runs are fenced by the claim's epoch like any: a step under it is stored.
    const [first] = claimed;
    await backend.saveSteps([startedStep(first?.run.id ?? "", 1, first?.run.epoch ?? 0)], {
      epoch: first?.run.epoch ?? 0,
      sync: true,
    });
    expect((await backend.loadSteps(first?.run.id ?? "")).map((step) => step.seq)).toEqual([1]);
  });

  it("claims in batches: oldest first, each of 100 runs to exactly one of 4 pools claiming 7 at a time", async () => {
    const schema = db.schema();
    const pools = [await open({ schema, max: 3 })];
    for (let i = 1; i < 4; i++) pools.push(await open({ schema, max: 3 }));
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) ids.push((await pools[0]?.createRun(runInput({ at: T0 + i })))?.run.id ?? "");
    const first = (
      (await pools[0]?.claimRuns({ workerId: "first", now: T0 + 1_000, leaseMs: LEASE_MS, limit: 3 })) ?? []
    ).map((c) => c.run);
    expect(first.map((r) => r.id)).toEqual(ids.slice(0, 3));
    expect(first.map((r) => [r.leaseOwner, r.epoch, r.leaseExpiresAt])).toEqual(
      Array(3).fill(["first", 1, T0 + 1_000 + LEASE_MS]),
    );
    const got = await Promise.all(
      pools.map(async (backend, p) => {
        const mine: RunRecord[] = [];
        for (;;) {
          const claimed = await backend.claimRuns({ workerId: `p${p}`, now: T0 + 1_000, leaseMs: LEASE_MS, limit: 7 });
          const runs = claimed.map((c) => c.run);
          if (runs.length === 0) return mine;
          expect(runs.length).toBeLessThanOrEqual(7);
          mine.push(...runs);
        }
      }),
    );
    const all = [...first, ...got.flat()];
    expect(all).toHaveLength(100);
    expect(new Set(all.map((r) => r.id))).toEqual(new Set(ids));
    const stored = await pools[0]?.listRuns({ limit: 200 });
    const owners = new Map(all.map((r) => [r.id, r.leaseOwner]));
    for (const run of stored ?? []) expect(run.leaseOwner).toBe(owners.get(run.id));
    // A run someone holds under a live lease is not claimed again.
    expect(await pools[1]?.claimRuns({ workerId: "late", now: T0 + 2_000, leaseMs: LEASE_MS, limit: 10 })).toEqual([]);
  });

  it("refuses every write of a pool whose run another pool claimed after the lease lapsed", async () => {
    const a = await open();
    const b = await open({ schema: a.schema });
    const { run } = await a.createRun(runInput());
    const byA = (await a.claimRun({ workerId: "wa", now: T0, leaseMs: LEASE_MS })) as RunRecord;
    await a.saveSteps([startedStep(run.id, 1, byA.epoch)], { epoch: byA.epoch, sync: false });
    expect(await b.claimRun({ workerId: "wb", now: T0 + LEASE_MS - 1, leaseMs: LEASE_MS })).toBeUndefined();
    const byB = (await b.claimRun({ workerId: "wb", now: T0 + LEASE_MS, leaseMs: LEASE_MS })) as RunRecord;
    expect(byB.epoch).toBe(2);
    const before = { steps: await b.loadSteps(run.id), transitions: await b.listTransitions(run.id) };

    for (const sync of [true, false]) {
      const error = await a.saveSteps([fullStep(run.id, 1, 1)], { epoch: 1, sync }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LeaseLostError);
      expect((error as Error).message).toBe(
        `run ${run.id}: step 1 under lease epoch 1 refused, the run is at epoch 2; this worker lost the run`,
      );
    }
    await expect(a.transition(move(byA, "PENDING", "RUNNING"))).rejects.toBeInstanceOf(LeaseLostError);
    const lost = await a.renewLeases({
      workerId: "wa",
      now: T0 + LEASE_MS,
      leaseMs: LEASE_MS,
      runs: [{ runId: byA.id, epoch: byA.epoch }],
    });
    expect(lost).toEqual([run.id]);
    expect({ steps: await a.loadSteps(run.id), transitions: await a.listTransitions(run.id) }).toStrictEqual(before);

    await b.transition(move(byB, "PENDING", "RUNNING"));
    await b.saveSteps([fullStep(run.id, 1, byB.epoch)], { epoch: byB.epoch, sync: true });
    expect((await a.loadSteps(run.id)).map((s) => [s.seq, s.status, s.epoch])).toEqual([[1, "completed", 2]]);
    expect(await a.getRun(run.id)).toMatchObject({ state: "RUNNING", leaseOwner: "wb", epoch: 2 });
  });
});
