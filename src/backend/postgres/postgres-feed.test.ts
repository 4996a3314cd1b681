import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startTestDatabase, type TestDatabase } from "../../../test/helpers/postgres.ts";
import type { RunRecord } from "../../core/records.ts";
import type { TransitionFeedEntry, TransitionRequest } from "../backend.ts";
import { move, runningRun, T0 } from "../conformance/conformance-fixtures.ts";
import { PostgresBackend } from "./postgres-backend.ts";
import { wakeChannel } from "./postgres-listener.ts";
import type { PlanContext } from "./postgres-plans.ts";
import { TYPES } from "./postgres-sql.ts";
import { statements } from "./postgres-statements.ts";
import { transitionsIn } from "./postgres-transitions.ts";

/** One transition through the batch path, in the transaction of `ctx`. */
async function transitionIn(ctx: PlanContext, request: TransitionRequest) {
  const [outcome] = await transitionsIn(ctx, [request]);
  if (!outcome?.ok) throw outcome?.error;
  return outcome.value;
}

/**
 * The global transition feed of PostgreSQL when transactions overlap: a transaction that got its
 * id first and commits last is not skipped, and a run's transitions stay in id order when the
 * transaction that writes the later one got its id first.
 */

let db: TestDatabase;

beforeAll(async () => {
  db = await startTestDatabase();
});

afterAll(async () => {
  await db?.close();
});

describe("PostgresBackend transition feed, transactions committing out of order", () => {
  const opened: PostgresBackend[] = [];
  const clients: pg.Client[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.end().catch(() => undefined);
    for (const backend of opened.splice(0)) {
      await backend.close();
      await db.dropSchema(backend.schema);
    }
  });

  async function open(): Promise<PostgresBackend> {
    const backend = new PostgresBackend({ connectionString: db.url, schema: db.schema() });
    opened.push(backend);
    await backend.init();
    return backend;
  }

  /** Another connection with a transaction open that already has its id; returns the id. */
  async function begin(): Promise<{ client: pg.Client; xid: string }> {
    const client = new pg.Client({ connectionString: db.url });
    clients.push(client);
    await client.connect();
    await client.query("BEGIN");
    const { rows } = await client.query<{ xid: string }>("SELECT pg_current_xact_id()::text AS xid");
    return { client, xid: rows[0]?.xid as string };
  }

  /** What the backend's plan operations need, on `client`'s transaction. */
  function contextOn(client: pg.Client, schema: string): PlanContext {
    return {
      query: async (statement, values) =>
        (await client.query({ name: statement.name, text: statement.text, values, types: TYPES })).rows,
      statements: statements(schema),
      channel: wakeChannel(schema),
      inlineLimitBytes: 1 << 20,
    };
  }

  /** Reads the feed on from `cursor`, adding to `into`; returns the new cursor. */
  async function readOn(backend: PostgresBackend, cursor: string, into: TransitionFeedEntry[]): Promise<string> {
    for (;;) {
      const page = await (backend.listTransitionsSince as NonNullable<PostgresBackend["listTransitionsSince"]>)({
        after: cursor,
        limit: 100,
      });
      into.push(...page.transitions);
      if (page.transitions.length < 100) return page.cursor;
      cursor = page.cursor;
    }
  }

  async function until(condition: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error("timed out");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  const key = (e: TransitionFeedEntry) => `${e.transition.runId}#${e.transition.id}`;

  it("holds back a transaction's later-numbered commit until the earlier one ends, then gives both", async () => {
    const backend = await open();
    const first = await runningRun(backend);
    const second = await runningRun(backend);
    const seen: TransitionFeedEntry[] = [];
    let cursor = await readOn(backend, "0.0.", seen);
    await until(async () => {
      cursor = await readOn(backend, cursor, seen);
      return seen.length === 4;
    });

    // T1 takes its id, then writes first's transition and stays open.
    const t1 = await begin();
    await transitionIn(
      contextOn(t1.client, backend.schema),
      move(first, "RUNNING", "PAUSED", { pausedReason: "awaiting_signal", patch: { releaseLease: true } }),
    );
    // T2, with a later id, writes second's transition and commits first.
    const ended = await backend.transition(
      move(second, "RUNNING", "COMPLETED", { patch: { output: 1, releaseLease: true } }),
    );
    expect(await backend.listTransitions(second.id)).toContainEqual(ended.transition);
    // Committed, yet not given: a reader that took it and moved its cursor past it would skip T1's.
    cursor = await readOn(backend, cursor, seen);
    await new Promise((resolve) => setTimeout(resolve, 50));
    cursor = await readOn(backend, cursor, seen);
    expect(seen.map(key)).not.toContain(`${second.id}#3`);

    await t1.client.query("COMMIT");
    await until(async () => {
      cursor = await readOn(backend, cursor, seen);
      return seen.length === 6;
    });
    expect(seen.slice(4).map(key)).toEqual([`${first.id}#3`, `${second.id}#3`]);
    expect(seen[4]?.cursor.startsWith(`${t1.xid}.`)).toBe(true);
    expect(new Set(seen.map(key)).size).toBe(6);
  });

  it("keeps a run's transitions in id order when the later one's transaction got its id first", async () => {
    const backend = await open();
    const run = await runningRun(backend);
    // T1 takes its id before anything else happens to the run.
    const t1 = await begin();
    const paused = await backend.transition(
      move(run, "RUNNING", "PAUSED", { pausedReason: "awaiting_signal", patch: { releaseLease: true } }),
    );
    // T1 then writes the run's next transition (as after waiting for the run's lock).
    const resumed = await transitionIn(
      contextOn(t1.client, backend.schema),
      move(paused.run as RunRecord, "PAUSED", "RESUMING", { fence: { unowned: true, now: T0 + 10 } }),
    );
    await t1.client.query("COMMIT");
    expect(resumed.transition.id).toBe(4);

    const keys = await db.query<{ id: number; feed_key: string }>(
      `SELECT id, feed_key::text AS feed_key FROM ${pg.escapeIdentifier(backend.schema)}.transitions
       WHERE run_id = $1 ORDER BY id`,
      [run.id],
    );
    const [, , third, fourth] = keys.rows;
    // The later transition takes the earlier one's key, which is above its own transaction's id.
    expect(BigInt(third?.feed_key ?? 0)).toBeGreaterThan(BigInt(t1.xid));
    expect(fourth?.feed_key).toBe(third?.feed_key);

    const seen: TransitionFeedEntry[] = [];
    await until(async () => {
      seen.length = 0;
      await readOn(backend, "0.0.", seen);
      return seen.length === 4;
    });
    expect(seen.map((e) => e.transition.id)).toEqual([1, 2, 3, 4]);
  });

  it("reads the feed from its index", async () => {
    const backend = await open();
    await runningRun(backend);
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    try {
      const client = await pool.connect();
      try {
        await client.query("SET enable_seqscan = off");
        const s = statements(backend.schema);
        const plan = async (text: string, values: unknown[]) =>
          (await client.query(`EXPLAIN ${text}`, values)).rows.map((r) => r["QUERY PLAN"]).join("\n");
        expect(await plan(s.feedAfter.text, ["0", "", 0, 100])).toContain("transitions_feed");
        expect(await plan(s.feedLatest.text, [])).toContain("transitions_feed");
      } finally {
        client.release();
      }
    } finally {
      await pool.end();
    }
  });
});
