import pg from "pg";
import { describe, expect, it } from "vitest";
import type { TestDatabase } from "../../../test/helpers/postgres.ts";
import { backendPerTest } from "../../../test/helpers/postgres-backend-per-test.ts";
import { until } from "../../../test/helpers/runtime-helpers.ts";
import { StorageError } from "../../core/errors.ts";
import type { RunRecord } from "../../core/records.ts";
import {
  endRun,
  LEASE_MS,
  move,
  runningRun,
  stopOf,
  suspendRequest,
  T0,
  waitRecord,
} from "../conformance/conformance-fixtures.ts";
import type { RunRow } from "../rows/run-rows.ts";
import type { PostgresBackend } from "./postgres-backend.ts";
import { wakeChannel } from "./postgres-listener.ts";
import type { PlanContext } from "./postgres-plans.ts";
import { TYPES } from "./postgres-sql.ts";
import { statements } from "./postgres-statements.ts";
import { lockTransitioning } from "./postgres-transitions.ts";
import { suspendIn } from "./postgres-waits.ts";

/**
 * The rows a transition locks are the rows it plans with: a parent whose pause commits while its
 * child's end waits for the parent's row must still be seen by that end, which then resolves the
 * parent's wait. (Issue 21: the lock statement chose its rows by a condition that PostgreSQL
 * checks again on a row that changed while the statement waited for it, and with the nested-loop
 * plan a table with some history gets, that check left the changed rows out: the child's end was
 * planned without its parent, and the parent stayed PAUSED for good.)
 */

const files = backendPerTest();

/**
 * Finished runs of the past, so the tables are planned as a database in use (20,000 runs): on a
 * nearly empty table PostgreSQL chose a hash join for the old lock statement, whose check kept the
 * changed rows; with this history it chose the nested loop that left them out.
 */
async function history(db: TestDatabase, schema: string): Promise<void> {
  const q = pg.escapeIdentifier(schema);
  await db.query(
    `INSERT INTO ${q}.runs (id, agent, workflow, state, input, epoch, recoveries, last_transition_id, versions, meta, created_at, updated_at)
     SELECT 'past-' || lpad(g::text, 6, '0'), 'report_builder', 'build', 'COMPLETED', '{}', 1, 0, 1, '{}', '{}', g, g
     FROM generate_series(1, 20000) AS g`,
  );
  await db.query(`ANALYZE ${q}.runs`);
}

/** A transaction of its own on its own connection: another worker writing while the backend waits. */
async function otherWorker(b: PostgresBackend, db: TestDatabase) {
  const client = new pg.Client({ connectionString: db.url });
  client.on("error", () => {});
  await client.connect();
  await client.query("BEGIN");
  const ctx: PlanContext = {
    query: async (statement, values) =>
      (await client.query({ name: statement.name, text: statement.text, values, types: TYPES })).rows,
    statements: statements(b.schema),
    channel: wakeChannel(b.schema),
    inlineLimitBytes: b.inlineLimitBytes,
  };
  return {
    ctx,
    query: (text: string, values: unknown[]) => client.query(text, values),
    commit: async () => {
      await client.query("COMMIT");
      await client.end();
    },
    end: () => client.end().catch(() => {}),
  };
}

/** Until `n` sessions of the test database wait for a lock. */
function lockWaits(db: TestDatabase, n: number): Promise<true> {
  return until(
    async () => {
      const { rows } = await db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
      );
      return (rows[0]?.n ?? 0) >= n;
    },
    { what: `${n} sessions waiting for a lock`, timeoutMs: 10_000 },
  );
}

/** Parents RUNNING with a RUNNING child each (`<parent>.1`), under fixed ids. */
async function families(b: PostgresBackend, n: number): Promise<{ parent: RunRecord; child: RunRecord }[]> {
  const made: { parent: RunRecord; child: RunRecord }[] = [];
  for (let i = 0; i < n; i++) {
    const parent = await runningRun(b, { overrides: { id: `family-${String(i).padStart(2, "0")}` } });
    const child = await runningRun(b, { workerId: "w2", overrides: { id: `${parent.id}.1`, parentRunId: parent.id } });
    made.push({ parent, child });
  }
  return made;
}

describe("PostgresBackend locks exactly the rows a transition plans with", () => {
  it("resolves the waits of parents whose pauses committed while their children's endings waited for their rows", async () => {
    const b = await files.open();
    await history(files.db, b.schema);
    const pairs = await families(b, 16);
    // The parents' worker pauses them on their children, and has not committed yet.
    const pausing = await otherWorker(b, files.db);
    try {
      for (const { parent, child } of pairs) {
        const wait = waitRecord(parent.id, 1, { kind: "child", name: child.id, details: { childRunId: child.id } });
        const paused = await suspendIn(
          pausing.ctx,
          suspendRequest(parent, [wait], { pausedReason: "awaiting_child", reason: "waits for its child" }),
        );
        expect(paused.paused).toBe(true);
      }
      // The children end together, in one batch: its lock waits for the first parent's row.
      const ending = Promise.allSettled(pairs.map(({ child }) => endRun(b, child, "COMPLETED", { at: T0 + 2_000 })));
      await lockWaits(files.db, 1);
      await pausing.commit();
      const ended = await ending;
      expect(ended.filter((r) => r.status === "rejected")).toEqual([]);
    } finally {
      await pausing.end();
    }
    for (const { parent, child } of pairs) {
      expect((await b.getRun(child.id))?.state).toBe("COMPLETED");
      expect(await b.getRun(parent.id)).toMatchObject({ state: "RESUMING", pausedReason: null });
      const [wait] = await b.loadWaits(parent.id);
      expect(wait).toMatchObject({
        status: "resolved",
        resolution: { outcome: "child_ended", value: { runId: child.id, state: "COMPLETED" }, at: T0 + 2_000 },
      });
      const last = (await b.listTransitions(parent.id)).at(-1);
      expect(last).toMatchObject({ from: "PAUSED", to: "RESUMING", reason: `child run ${child.id} ended COMPLETED` });
    }
  });

  it("a cancel of a child waiting for reconciliation, racing its parent's pause, is stored and ends nothing", async () => {
    const b = await files.open();
    await history(files.db, b.schema);
    const [{ parent, child }] = (await families(b, 1)) as [{ parent: RunRecord; child: RunRecord }];
    // A child whose effect's outcome nobody knows: a cancel waits for the operator's reconcile
    // (DESIGN §5), so no cancel ends a run at once any more, and the parent's pause committing
    // meanwhile is left as it is.
    const { run: stuck } = await b.transition(
      move(child, "RUNNING", "NEEDS_RECONCILIATION", { patch: { releaseLease: true } }),
    );
    const pausing = await otherWorker(b, files.db);
    try {
      const wait = waitRecord(parent.id, 1, { kind: "child", name: child.id, details: { childRunId: child.id } });
      await suspendIn(pausing.ctx, suspendRequest(parent, [wait], { pausedReason: "awaiting_child" }));
      const cancelled = b.requestStop(stopOf(stuck.id, "cancel"));
      await pausing.commit();
      expect((await cancelled).run).toMatchObject({ state: "NEEDS_RECONCILIATION", stopRequest: { kind: "cancel" } });
    } finally {
      await pausing.end();
    }
    expect((await b.getRun(parent.id))?.state).toBe("PAUSED");
    expect((await b.loadWaits(parent.id))[0]).toMatchObject({ status: "open" });
  });

  it("a cancel locks its run alone: a parent and a child held by other transactions do not hold it up", async () => {
    const b = await files.open();
    const [{ parent, child }] = (await families(b, 1)) as [{ parent: RunRecord; child: RunRecord }];
    const grandchild = await runningRun(b, {
      workerId: "w3",
      overrides: { id: `${child.id}.1`, parentRunId: child.id },
    });
    // The parent's and the grandchild's workers hold their rows (renewing their leases) and have
    // not committed. A stop changes its run alone, so the cancel of the child must not wait for
    // them (it did, when a cancel locked what a run's end locks: the run, its parent, its children).
    const holders = await otherWorker(b, files.db);
    const runs = `${pg.escapeIdentifier(b.schema)}.runs`;
    try {
      await holders.query(`UPDATE ${runs} SET lease_expires_at = $2 WHERE id = ANY ($1)`, [
        [parent.id, grandchild.id],
        T0 + 2 * LEASE_MS,
      ]);
      const cancelled = b.requestStop(stopOf(child.id, "cancel"));
      const outcome = await Promise.race([
        cancelled.then((result) => result.run),
        new Promise<"waited">((resolve) => setTimeout(() => resolve("waited"), 3_000).unref()),
      ]);
      expect(outcome).toMatchObject({ id: child.id, state: "RUNNING", stopRequest: { kind: "cancel" } });
    } finally {
      await holders.commit();
    }
    expect(await b.listStopRequested("w2")).toEqual([child.id]);
  });

  it("plans each ending run with its own row when another transaction changed that row while the lock waited", async () => {
    const b = await files.open();
    await history(files.db, b.schema);
    const pairs = await families(b, 16);
    // One transaction holds the parents (their worker renews their leases); the children's own
    // worker renews the children's leases in another, committed while the endings wait.
    const parents = await otherWorker(b, files.db);
    const children = await otherWorker(b, files.db);
    const runs = `${pg.escapeIdentifier(b.schema)}.runs`;
    try {
      await parents.query(`UPDATE ${runs} SET lease_expires_at = $2 WHERE id = ANY ($1)`, [
        pairs.map((p) => p.parent.id),
        T0 + 2 * LEASE_MS,
      ]);
      const ending = Promise.allSettled(pairs.map(({ child }) => endRun(b, child, "COMPLETED", { at: T0 + 2_000 })));
      await lockWaits(files.db, 1);
      await children.query(`UPDATE ${runs} SET lease_expires_at = $2 WHERE id = ANY ($1)`, [
        pairs.map((p) => p.child.id),
        T0 + 2 * LEASE_MS,
      ]);
      await children.commit();
      await parents.commit();
      const ended = await ending;
      expect(ended.filter((r) => r.status === "rejected")).toEqual([]);
    } finally {
      await parents.end();
      await children.end();
    }
    for (const { parent, child } of pairs) {
      expect((await b.getRun(child.id))?.state).toBe("COMPLETED");
      // The parent was RUNNING and not waiting: a child's end that ended nothing else.
      expect((await b.getRun(parent.id))?.state).toBe("RUNNING");
    }
  });

  it("locks again when a row it chose did not come back, and gives up with a StorageError after three tries", async () => {
    const b = await files.open();
    const [{ parent, child }] = (await families(b, 1)) as [{ parent: RunRecord; child: RunRecord }];
    const s = statements(b.schema);
    // The statement's rows for the child's end, read as the backend reads them (JSON as text),
    // each with the count of runs it chose (2).
    const reader = new pg.Client({ connectionString: files.db.url });
    await reader.connect();
    const { rows } = await reader
      .query<RunRow & { wanted: number }>({
        text: s.lockTransitioning.text,
        values: [[child.id], [child.id]],
        types: TYPES,
      })
      .finally(() => reader.end());
    expect(rows.map((r) => [r.id, r.wanted])).toEqual([
      [parent.id, 2],
      [child.id, 2],
    ]);
    // A statement that leaves the parent out, as the old one did, `short` times.
    const calls: unknown[][] = [];
    const shortBy = (short: number): PlanContext => ({
      query: async <R>(statement: { name: string }, values: unknown[]) => {
        expect(statement.name).toBe(s.lockTransitioning.name);
        calls.push(values);
        return (calls.length <= short ? rows.slice(1) : rows) as R[];
      },
      statements: s,
      channel: wakeChannel(b.schema),
      inlineLimitBytes: b.inlineLimitBytes,
    });
    const locked = await lockTransitioning(shortBy(2), [child.id], [child.id]);
    expect(locked.map((r) => r.id)).toEqual([parent.id, child.id]);
    expect(calls).toHaveLength(3);
    calls.length = 0;
    const error = await lockTransitioning(shortBy(3), [child.id], [child.id]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageError);
    expect(String(error)).toContain(
      `locking runs ${child.id} for a transition: 1 of the 2 runs chosen came back locked`,
    );
    expect(calls).toHaveLength(3);
  });
});
